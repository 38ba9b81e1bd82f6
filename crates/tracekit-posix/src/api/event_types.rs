//! Event type identifiers of a stream or a log: names and the type list.

use super::*;

/// `posix_trace_trid_eventid_open`.
pub fn trid_eventid_open(trid: TraceId, name: &[u8]) -> Result<u32, Errno> {
    let a = active(trid)?;
    if name.len() > TRACE_EVENT_NAME_MAX {
        return Err(libc::ENAMETOOLONG);
    }
    if a.attach_idx.load(Acquire) >= 0 {
        // Keep this process's ids and the stream's in step.
        traced::eventid_open(name)?;
    }
    a.view.register(name).ok_or(libc::ENAMETOOLONG)
}

/// `posix_trace_eventid_get_name`.
pub fn eventid_get_name(trid: TraceId, id: u32) -> Result<Vec<u8>, Errno> {
    with_handle(trid, |h| match h {
        Handle::Active(a) if a.is_live() => a.view.type_name(id).ok_or(libc::EINVAL),
        Handle::Log(p) => p
            .reader
            .type_name(id)
            .map(<[u8]>::to_vec)
            .ok_or(libc::EINVAL),
        _ => Err(libc::EINVAL),
    })
}

fn log_type_ids(r: &LogReader) -> Vec<u32> {
    let mut v: Vec<u32> = SYSTEM_EVENT_NAMES
        .iter()
        .map(|(i, _)| *i)
        .filter(|&i| i != POSIX_TRACE_UNNAMED_USEREVENT)
        .collect();
    v.extend(r.types.iter().map(|(i, _)| *i));
    v
}

/// `posix_trace_eventtypelist_getnext_id`: `None` at the end.
pub fn eventtypelist_getnext_id(trid: TraceId) -> Result<Option<u32>, Errno> {
    with_handle(trid, |h| match h {
        Handle::Active(a) if a.is_live() => {
            let ids = a.view.type_ids();
            let mut pos = lock(&a.typelist_pos);
            let r = ids.get(*pos).copied();
            if r.is_some() {
                *pos += 1;
            }
            Ok(r)
        }
        Handle::Log(p) => {
            let ids = log_type_ids(&p.reader);
            let r = ids.get(p.typelist_pos).copied();
            if r.is_some() {
                p.typelist_pos += 1;
            }
            Ok(r)
        }
        _ => Err(libc::EINVAL),
    })
}

/// `posix_trace_eventtypelist_rewind`.
pub fn eventtypelist_rewind(trid: TraceId) -> Result<(), Errno> {
    with_handle(trid, |h| match h {
        Handle::Active(a) if a.is_live() => {
            *lock(&a.typelist_pos) = 0;
            Ok(())
        }
        Handle::Log(p) => {
            p.typelist_pos = 0;
            Ok(())
        }
        _ => Err(libc::EINVAL),
    })
}
