//! The getnext family: reading an active stream (without log) or a
//! pre-recorded log.

use super::*;
use crate::fragments::StreamReader;

/// Copies an event's payload into `buf` (truncating: TRUNCATED_READ) and
/// its description into `out`; returns the bytes copied.
#[inline(always)]
fn copy_out(info: &EventInfo, data: &[u8], buf: &mut [u8], out: &mut EventInfo) -> usize {
    let n = data.len().min(buf.len());
    buf[..n].copy_from_slice(&data[..n]);
    *out = *info;
    if n < data.len() {
        out.truncation = POSIX_TRACE_TRUNCATED_READ;
    }
    n
}

/// An active stream is read through getnext only by the process that
/// created it, and only without a log (POSIX: a stream with a log is
/// analysed by opening its log): EINVAL otherwise.
#[inline(always)]
fn readable(a: &Active) -> Result<(), Errno> {
    if a.creator_pid != traced::cached_pid() || a.with_log {
        return Err(libc::EINVAL);
    }
    Ok(())
}

/// The getnext functions: `Ok(None)` means "unavailable" (end of a log,
/// nothing ready for [`Wait::Never`]).
pub fn getnext_event(
    trid: TraceId,
    buf: &mut [u8],
    wait: Wait,
) -> Result<Option<ReadEvent>, Errno> {
    let mut info = EventInfo {
        event_id: 0,
        pid: 0,
        truncation: 0,
        thread: 0,
        prog_address: 0,
        timestamp_ns: 0,
    };
    let got = getnext_event_into(trid, buf, wait, &mut info)?;
    Ok(got.map(|data_len| ReadEvent { info, data_len }))
}

/// [`getnext_event`] that fills `info` in place and returns the payload
/// bytes copied: the analyzer's loop over a log moves no large value (the
/// C library reads through it).
pub fn getnext_event_into(
    trid: TraceId,
    buf: &mut [u8],
    wait: Wait,
    info: &mut EventInfo,
) -> Result<Option<usize>, Errno> {
    // A log is read under the table's lock (no handle cloned per event);
    // a stream may block, so not under it.
    let mut stream = None;
    let got = with_handle(trid, |h| match h {
        Handle::Log(p) => read_log(p, buf, wait, info),
        Handle::Active(a) => {
            stream = Some(a.clone());
            Ok(None)
        }
    })?;
    let Some(a) = stream else {
        return Ok(got);
    };
    readable(&a)?;
    read_active(&a, buf, wait, info)
}

/// The recorders' read ([`StreamReader`]): each event is seen where the
/// reader holds it, not copied out; `f` runs with the stream's consumer
/// (an active stream) or the handle table (a log) locked, so it must not
/// read the stream itself.
///
/// Here rather than in `fragments` because it needs the handles.
impl StreamReader {
    /// The next event, handed to `f` (`Ok(None)`: as for
    /// [`getnext_event`]).
    pub fn next_with<R>(
        &self,
        wait: Wait,
        f: impl FnOnce(&EventInfo, &[u8]) -> R,
    ) -> Result<Option<R>, Errno> {
        let mut f = Some(f);
        let mut stream = None;
        let got = with_handle(self.trid, |h| match h {
            Handle::Log(p) => {
                if matches!(wait, Wait::Never) {
                    return Err(libc::EINVAL);
                }
                loop {
                    match p.reader.next_event() {
                        None => return Ok(None),
                        Some(Ok(e)) => return Ok(f.take().map(|f| f(&e.info, e.data))),
                        // A corrupt block: the reader skipped to the next one.
                        Some(Err(_)) => continue,
                    }
                }
            }
            Handle::Active(a) => {
                stream = Some(a.clone());
                Ok(None)
            }
        })?;
        let (Some(a), Some(f)) = (stream, f) else {
            return Ok(got);
        };
        readable(&a)?;
        read_active_with(&a, wait, f)
    }

    /// The events ready now, at most `max`, each handed to `f` in the
    /// order [`Self::next_with`] would give them, under one lock of the
    /// stream's consumer and with one commit at the end: the recorders'
    /// batch read. Never waits; `Ok(Ok(0))`: nothing ready. Stops at the
    /// first error of `f` (`Ok(Err)`; the events `f` saw are read). A log
    /// is refused (EINVAL), as by `next_with` with [`Wait::Never`].
    pub fn drain_with<E>(
        &self,
        max: usize,
        f: impl FnMut(&EventInfo, &[u8]) -> Result<(), E>,
    ) -> Result<Result<usize, E>, Errno> {
        let a = with_handle(self.trid, |h| match h {
            Handle::Log(_) => Err(libc::EINVAL),
            Handle::Active(a) => Ok(a.clone()),
        })?;
        readable(&a)?;
        drain_active_with(&a, max, f)
    }
}

#[inline(always)]
fn read_log(
    p: &mut Pre,
    buf: &mut [u8],
    wait: Wait,
    out: &mut EventInfo,
) -> Result<Option<usize>, Errno> {
    if matches!(wait, Wait::Never) {
        return Err(libc::EINVAL);
    }
    loop {
        match p.reader.next_event() {
            None => return Ok(None),
            Some(Ok(e)) => return Ok(Some(copy_out(&e.info, e.data, buf, out))),
            // A corrupt block: the reader skipped to the next one.
            Some(Err(_)) => continue,
        }
    }
}

fn read_active(
    a: &Active,
    buf: &mut [u8],
    wait: Wait,
    out: &mut EventInfo,
) -> Result<Option<usize>, Errno> {
    read_active_with(a, wait, |info, data| copy_out(info, data, buf, out))
}

/// Hands `f` the events an active stream has ready, at most `max`, under
/// one lock and with one commit (see [`StreamReader::drain_with`]).
fn drain_active_with<E>(
    a: &Active,
    max: usize,
    mut f: impl FnMut(&EventInfo, &[u8]) -> Result<(), E>,
) -> Result<Result<usize, E>, Errno> {
    let mut c = lock(&a.consumer);
    if a.closed.load(Acquire) {
        return Err(libc::EINVAL);
    }
    let mut n = 0;
    let mut result = Ok(());
    while n < max {
        let Next::Event(info) = c.step(&a.view) else {
            break;
        };
        n += 1;
        result = f(&info, c.payload(&a.view));
        if result.is_err() {
            break;
        }
    }
    // Destructive: every slot `f` saw is the writers' again.
    c.commit(&a.view);
    Ok(result.map(|()| n))
}

/// Reads an active stream's next event and hands it to `f` where it lies
/// (in the ring, unless it had to be copied out: no copy into a caller's
/// buffer).
fn read_active_with<R>(
    a: &Active,
    wait: Wait,
    f: impl FnOnce(&EventInfo, &[u8]) -> R,
) -> Result<Option<R>, Errno> {
    let mut f = Some(f);
    let mut sleep_us = 1u64;
    let mut validated = false;
    loop {
        {
            let mut c = lock(&a.consumer);
            if a.closed.load(Acquire) {
                return Err(libc::EINVAL);
            }
            let got = match c.step(&a.view) {
                Next::Event(info) => f.take().map(|f| f(&info, c.payload(&a.view))),
                _ => None,
            };
            // Reading an active stream is destructive: the slot is the
            // writers' again once `f` has seen the event in it.
            c.commit(&a.view);
            if got.is_some() {
                return Ok(got);
            }
        }
        match wait {
            Wait::Never => return Ok(None),
            Wait::Forever => {}
            Wait::Until(ts) => {
                if !validated {
                    if !(0..1_000_000_000).contains(&ts.tv_nsec) {
                        return Err(libc::EINVAL);
                    }
                    validated = true;
                }
                let deadline = ts.tv_sec * 1_000_000_000 + ts.tv_nsec;
                if crate::clock::realtime_ns() >= deadline {
                    return Err(libc::ETIMEDOUT);
                }
            }
        }
        // Writers never make system calls, so the reader polls, backing
        // off to 1 ms. A signal interrupts the sleep: EINTR.
        let req = libc::timespec {
            tv_sec: 0,
            tv_nsec: (sleep_us * 1000) as libc::c_long,
        };
        // SAFETY: valid timespec; the remainder pointer may be null.
        if unsafe { libc::nanosleep(&req, std::ptr::null_mut()) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {
            return Err(libc::EINTR);
        }
        sleep_us = (sleep_us * 2).min(1000);
    }
}
