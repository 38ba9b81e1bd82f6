//! `<trace.h>` for Linux: the C ABI of the tracekit POSIX trace engine.
//!
//! Build products: `libtracekit_posix_c.so` and `libtracekit_posix_c.a`;
//! the header is `include/trace.h` at the repository root. Every function
//! returns 0 or the error number, as the standard says (not -1/errno).
//! Layouts of the application-allocated types (`trace_attr_t`,
//! `trace_event_set_t`) and of the two structures are fixed here and in the
//! header; `tests/c_programs.rs` checks they agree.
//!
//! Using it from C:
//!
//! ```text
//! cargo build --release -p tracekit-posix-c
//! cc -I include prog.c -L target/release -ltracekit_posix_c \
//!    -Wl,-rpath,$PWD/target/release -lpthread
//! # or statically: ... target/release/libtracekit_posix_c.a -lpthread -ldl -lm
//! ```
//!
//! `posix_trace_event` is a two-instruction trampoline (x86-64, aarch64)
//! that passes its return address on as `posix_prog_address`.
//! An unmodified `<trace.h>` program can also be traced by another
//! process: `tracekit posix record -- ./prog` (see `tracekit-posix`).

#![allow(clippy::missing_safety_doc)]

pub mod exec;

use std::ffi::{c_char, c_int, c_void, CStr};

use tracekit_posix::api::{self, Wait};
use tracekit_posix::attr::TRACE_ATTR_T_SIZE;
use tracekit_posix::consts::*;
use tracekit_posix::{shm, traced, EventSet, Status, TraceAttr};

pub type TraceId = u64;
pub type TraceEventId = u32;

/// `struct posix_trace_event_info`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PosixTraceEventInfo {
    pub posix_event_id: TraceEventId,
    pub posix_pid: libc::pid_t,
    pub posix_prog_address: *mut c_void,
    pub posix_truncation_status: c_int,
    pub posix_timestamp: libc::timespec,
    pub posix_thread_id: libc::pthread_t,
}

/// `struct posix_trace_status_info` (same layout as [`Status`]).
pub type PosixTraceStatusInfo = Status;

/// The C `trace_attr_t`.
#[repr(C, align(8))]
pub struct TraceAttrT {
    pub opaque: [u8; TRACE_ATTR_T_SIZE],
}

const EINVAL: c_int = libc::EINVAL;

fn rc(r: Result<(), i32>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e,
    }
}

/// The standard's out-parameter convention: the value through `out` and
/// 0, or the error number (and `out` untouched).
fn store<T>(out: &mut T, r: Result<T, i32>) -> c_int {
    match r {
        Ok(v) => {
            *out = v;
            0
        }
        Err(e) => e,
    }
}

unsafe fn attr_mut<'a>(a: *mut TraceAttrT) -> Option<&'a mut TraceAttr> {
    // SAFETY: the caller passes a trace_attr_t (256 bytes, 8-aligned),
    // which holds a TraceAttr (checked smaller at compile time).
    let a = unsafe { (a as *mut TraceAttr).as_mut()? };
    a.is_valid().then_some(a)
}

unsafe fn attr_ref<'a>(a: *const TraceAttrT) -> Option<&'a TraceAttr> {
    // SAFETY: as in attr_mut.
    let a = unsafe { (a as *const TraceAttr).as_ref()? };
    a.is_valid().then_some(a)
}

macro_rules! attr_or_einval {
    ($a:expr) => {
        // SAFETY: see attr_mut/attr_ref.
        match unsafe { $a } {
            Some(a) => a,
            None => return EINVAL,
        }
    };
}

unsafe fn out<'a, T>(p: *mut T) -> Option<&'a mut T> {
    // SAFETY: caller-provided out-pointer; null is refused.
    unsafe { p.as_mut() }
}

macro_rules! out_or_einval {
    ($p:expr) => {
        // SAFETY: see out().
        match unsafe { out($p) } {
            Some(p) => p,
            None => return EINVAL,
        }
    };
}

fn ts(ns: i64) -> libc::timespec {
    libc::timespec {
        tv_sec: ns.div_euclid(1_000_000_000),
        tv_nsec: ns.rem_euclid(1_000_000_000),
    }
}

unsafe fn copy_name(dst: *mut c_char, src: &[u8], max: usize) -> c_int {
    if dst.is_null() {
        return EINVAL;
    }
    let n = src.len().min(max);
    // SAFETY: the standard requires dst to hold max+1 bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), dst as *mut u8, n);
        *dst.add(n) = 0;
    }
    0
}

// ---- attributes -------------------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_init(attr: *mut TraceAttrT) -> c_int {
    if attr.is_null() {
        return EINVAL;
    }
    // SAFETY: attr points at a trace_attr_t.
    unsafe { (attr as *mut TraceAttr).write(TraceAttr::default()) };
    0
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_destroy(attr: *mut TraceAttrT) -> c_int {
    attr_or_einval!(attr_mut(attr)).invalidate();
    0
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getgenversion(
    attr: *const TraceAttrT,
    genversion: *mut c_char,
) -> c_int {
    let a = attr_or_einval!(attr_ref(attr));
    let g = tracekit_posix::attr::cstr_field(&a.genversion)
        .as_bytes()
        .to_vec();
    // SAFETY: buffer of TRACE_NAME_MAX+1 bytes per the standard.
    unsafe { copy_name(genversion, &g, TRACE_NAME_MAX) }
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getname(
    attr: *const TraceAttrT,
    tracename: *mut c_char,
) -> c_int {
    let a = attr_or_einval!(attr_ref(attr));
    let n = a.name_str().as_bytes().to_vec();
    // SAFETY: buffer of TRACE_NAME_MAX+1 bytes per the standard.
    unsafe { copy_name(tracename, &n, TRACE_NAME_MAX) }
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_setname(
    attr: *mut TraceAttrT,
    tracename: *const c_char,
) -> c_int {
    let a = attr_or_einval!(attr_mut(attr));
    if tracename.is_null() {
        return EINVAL;
    }
    // SAFETY: a NUL-terminated string from the caller.
    a.set_name(unsafe { CStr::from_ptr(tracename) }.to_bytes());
    0
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getcreatetime(
    attr: *const TraceAttrT,
    createtime: *mut libc::timespec,
) -> c_int {
    let a = attr_or_einval!(attr_ref(attr));
    *out_or_einval!(createtime) = libc::timespec {
        tv_sec: a.create_time_sec,
        tv_nsec: a.create_time_nsec,
    };
    0
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getclockres(
    attr: *const TraceAttrT,
    resolution: *mut libc::timespec,
) -> c_int {
    let a = attr_or_einval!(attr_ref(attr));
    *out_or_einval!(resolution) = ts(a.clockres_nsec);
    0
}

macro_rules! policy_get {
    ($name:ident, $field:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(attr: *const TraceAttrT, policy: *mut c_int) -> c_int {
            let a = attr_or_einval!(attr_ref(attr));
            *out_or_einval!(policy) = a.$field;
            0
        }
    };
}
policy_get!(posix_trace_attr_getstreamfullpolicy, stream_policy);
policy_get!(posix_trace_attr_getlogfullpolicy, log_policy);
policy_get!(posix_trace_attr_getinherited, inheritance);

macro_rules! policy_set {
    ($name:ident, $method:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(attr: *mut TraceAttrT, policy: c_int) -> c_int {
            let a = attr_or_einval!(attr_mut(attr));
            if a.$method(policy) {
                0
            } else {
                EINVAL
            }
        }
    };
}
policy_set!(posix_trace_attr_setstreamfullpolicy, set_stream_policy);
policy_set!(posix_trace_attr_setlogfullpolicy, set_log_policy);
policy_set!(posix_trace_attr_setinherited, set_inheritance);

macro_rules! size_get {
    ($name:ident, $field:ident) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(attr: *const TraceAttrT, size: *mut usize) -> c_int {
            let a = attr_or_einval!(attr_ref(attr));
            *out_or_einval!(size) = a.$field as usize;
            0
        }
    };
}
size_get!(posix_trace_attr_getstreamsize, stream_size);
size_get!(posix_trace_attr_getmaxdatasize, max_data_size);
size_get!(posix_trace_attr_getlogsize, log_size);

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_setstreamsize(
    attr: *mut TraceAttrT,
    size: usize,
) -> c_int {
    attr_or_einval!(attr_mut(attr)).stream_size = size as u64;
    0
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_setlogsize(attr: *mut TraceAttrT, size: usize) -> c_int {
    attr_or_einval!(attr_mut(attr)).log_size = size as u64;
    0
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_setmaxdatasize(
    attr: *mut TraceAttrT,
    size: usize,
) -> c_int {
    if attr_or_einval!(attr_mut(attr)).set_max_data_size(size as u64) {
        0
    } else {
        EINVAL
    }
}

/// Every event takes one slot, so the worst case of any event is a slot.
#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getmaxsystemeventsize(
    attr: *const TraceAttrT,
    eventsize: *mut usize,
) -> c_int {
    let a = attr_or_einval!(attr_ref(attr));
    *out_or_einval!(eventsize) = shm::slot_geometry(a.max_data_size).1;
    0
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_attr_getmaxusereventsize(
    attr: *const TraceAttrT,
    _data_len: usize,
    eventsize: *mut usize,
) -> c_int {
    let a = attr_or_einval!(attr_ref(attr));
    *out_or_einval!(eventsize) = shm::slot_geometry(a.max_data_size).1;
    0
}

// ---- stream life cycle --------------------------------------------------

fn attr_opt<'a>(attr: *const TraceAttrT) -> Result<Option<&'a TraceAttr>, c_int> {
    if attr.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null trace_attr_t from the caller.
    unsafe { attr_ref(attr) }.map(Some).ok_or(EINVAL)
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_create(
    pid: libc::pid_t,
    attr: *const TraceAttrT,
    trid: *mut TraceId,
) -> c_int {
    let a = match attr_opt(attr) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let t = out_or_einval!(trid);
    store(t, api::create(pid, a, None))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_create_withlog(
    pid: libc::pid_t,
    attr: *const TraceAttrT,
    file_desc: c_int,
    trid: *mut TraceId,
) -> c_int {
    let a = match attr_opt(attr) {
        Ok(a) => a,
        Err(e) => return e,
    };
    let t = out_or_einval!(trid);
    store(t, api::create(pid, a, Some(file_desc)))
}

#[no_mangle]
pub extern "C" fn posix_trace_flush(trid: TraceId) -> c_int {
    rc(api::flush(trid))
}
#[no_mangle]
pub extern "C" fn posix_trace_shutdown(trid: TraceId) -> c_int {
    rc(api::shutdown(trid))
}
#[no_mangle]
pub extern "C" fn posix_trace_start(trid: TraceId) -> c_int {
    rc(api::start(trid))
}
#[no_mangle]
pub extern "C" fn posix_trace_stop(trid: TraceId) -> c_int {
    rc(api::stop(trid))
}
#[no_mangle]
pub extern "C" fn posix_trace_clear(trid: TraceId) -> c_int {
    rc(api::clear(trid))
}
#[no_mangle]
pub extern "C" fn posix_trace_rewind(trid: TraceId) -> c_int {
    rc(api::rewind(trid))
}
#[no_mangle]
pub extern "C" fn posix_trace_close(trid: TraceId) -> c_int {
    rc(api::close(trid))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_open(file_desc: c_int, trid: *mut TraceId) -> c_int {
    let t = out_or_einval!(trid);
    store(t, api::open(file_desc))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_get_attr(trid: TraceId, attr: *mut TraceAttrT) -> c_int {
    let a = attr_or_einval!(attr_mut(attr));
    store(a, api::get_attr(trid))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_get_status(
    trid: TraceId,
    statusinfo: *mut PosixTraceStatusInfo,
) -> c_int {
    let s = out_or_einval!(statusinfo);
    store(s, api::get_status(trid))
}

// ---- event types --------------------------------------------------------

unsafe fn name_arg<'a>(p: *const c_char) -> Option<&'a [u8]> {
    // SAFETY: a NUL-terminated string from the caller.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_bytes())
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_eventid_open(
    event_name: *const c_char,
    event_id: *mut TraceEventId,
) -> c_int {
    // SAFETY: see name_arg.
    let Some(name) = (unsafe { name_arg(event_name) }) else {
        return EINVAL;
    };
    let o = out_or_einval!(event_id);
    store(o, traced::eventid_open(name))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_trid_eventid_open(
    trid: TraceId,
    event_name: *const c_char,
    event: *mut TraceEventId,
) -> c_int {
    // SAFETY: see name_arg.
    let Some(name) = (unsafe { name_arg(event_name) }) else {
        return EINVAL;
    };
    let o = out_or_einval!(event);
    store(o, api::trid_eventid_open(trid, name))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_eventid_get_name(
    trid: TraceId,
    event: TraceEventId,
    event_name: *mut c_char,
) -> c_int {
    match api::eventid_get_name(trid, event) {
        // SAFETY: buffer of TRACE_EVENT_NAME_MAX+1 bytes per the standard.
        Ok(n) => unsafe { copy_name(event_name, &n, TRACE_EVENT_NAME_MAX) },
        Err(e) => e,
    }
}

#[no_mangle]
pub extern "C" fn posix_trace_eventid_equal(
    _trid: TraceId,
    event1: TraceEventId,
    event2: TraceEventId,
) -> c_int {
    (event1 == event2) as c_int
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_eventtypelist_getnext_id(
    trid: TraceId,
    event: *mut TraceEventId,
    unavailable: *mut c_int,
) -> c_int {
    let u = out_or_einval!(unavailable);
    let ev = out_or_einval!(event);
    match api::eventtypelist_getnext_id(trid) {
        Ok(Some(id)) => {
            *ev = id;
            *u = 0;
            0
        }
        Ok(None) => {
            *u = 1;
            0
        }
        Err(e) => e,
    }
}

#[no_mangle]
pub extern "C" fn posix_trace_eventtypelist_rewind(trid: TraceId) -> c_int {
    rc(api::eventtypelist_rewind(trid))
}

// ---- event sets and filters ---------------------------------------------

#[no_mangle]
pub unsafe extern "C" fn posix_trace_eventset_empty(set: *mut EventSet) -> c_int {
    *out_or_einval!(set) = EventSet::empty();
    0
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_eventset_fill(set: *mut EventSet, what: c_int) -> c_int {
    let s = out_or_einval!(set);
    match EventSet::filled(what) {
        Some(f) => {
            *s = f;
            0
        }
        None => EINVAL,
    }
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_eventset_add(
    event_id: TraceEventId,
    set: *mut EventSet,
) -> c_int {
    if out_or_einval!(set).add(event_id) {
        0
    } else {
        EINVAL
    }
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_eventset_del(
    event_id: TraceEventId,
    set: *mut EventSet,
) -> c_int {
    if out_or_einval!(set).del(event_id) {
        0
    } else {
        EINVAL
    }
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_eventset_ismember(
    event_id: TraceEventId,
    set: *const EventSet,
    ismember: *mut c_int,
) -> c_int {
    // SAFETY: caller-provided set.
    let Some(s) = (unsafe { set.as_ref() }) else {
        return EINVAL;
    };
    if event_id >= EVENT_ID_END {
        return EINVAL;
    }
    *out_or_einval!(ismember) = s.contains(event_id) as c_int;
    0
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_set_filter(
    trid: TraceId,
    set: *const EventSet,
    how: c_int,
) -> c_int {
    // SAFETY: caller-provided set.
    let Some(s) = (unsafe { set.as_ref() }) else {
        return EINVAL;
    };
    rc(api::set_filter(trid, s, how))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_get_filter(trid: TraceId, set: *mut EventSet) -> c_int {
    let s = out_or_einval!(set);
    store(s, api::get_filter(trid))
}

// ---- the traced process -------------------------------------------------

/// Records with an explicit call site; `posix_trace_event` calls it with
/// its return address.
#[no_mangle]
pub unsafe extern "C" fn tracekit_posix_event_at(
    event_id: TraceEventId,
    data: *const c_void,
    data_len: usize,
    prog: *const c_void,
) {
    let d: &[u8] = if data.is_null() || data_len == 0 {
        &[]
    } else {
        // SAFETY: the caller provides data_len readable bytes.
        unsafe { std::slice::from_raw_parts(data as *const u8, data_len) }
    };
    traced::trace_event_at(event_id, d, prog as usize);
}

/// `posix_trace_event`: passes its own return address (the call site) on
/// as `posix_prog_address`, then tail-calls [`tracekit_posix_event_at`].
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn posix_trace_event(
    _event_id: TraceEventId,
    _data: *const c_void,
    _len: usize,
) {
    core::arch::naked_asm!("mov rcx, [rsp]", "jmp {f}", f = sym tracekit_posix_event_at)
}

#[cfg(target_arch = "aarch64")]
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn posix_trace_event(
    _event_id: TraceEventId,
    _data: *const c_void,
    _len: usize,
) {
    core::arch::naked_asm!("mov x3, x30", "b {f}", f = sym tracekit_posix_event_at)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[no_mangle]
pub unsafe extern "C" fn posix_trace_event(
    event_id: TraceEventId,
    data: *const c_void,
    len: usize,
) {
    // SAFETY: forwarded arguments.
    unsafe { tracekit_posix_event_at(event_id, data, len, std::ptr::null()) }
}

// ---- reading ------------------------------------------------------------

unsafe fn read(
    trid: TraceId,
    event: *mut PosixTraceEventInfo,
    data: *mut c_void,
    num_bytes: usize,
    data_len: *mut usize,
    unavailable: *mut c_int,
    wait: Wait,
) -> c_int {
    let ev = out_or_einval!(event);
    let u = out_or_einval!(unavailable);
    let buf: &mut [u8] = if data.is_null() || num_bytes == 0 {
        &mut []
    } else {
        // SAFETY: the caller provides num_bytes writable bytes.
        unsafe { std::slice::from_raw_parts_mut(data as *mut u8, num_bytes) }
    };
    let mut info = tracekit_posix::EventInfo {
        event_id: 0,
        pid: 0,
        truncation: 0,
        thread: 0,
        prog_address: 0,
        timestamp_ns: 0,
    };
    match api::getnext_event_into(trid, buf, wait, &mut info) {
        Ok(Some(n)) => {
            *ev = PosixTraceEventInfo {
                posix_event_id: info.event_id,
                posix_pid: info.pid,
                posix_prog_address: info.prog_address as *mut c_void,
                posix_truncation_status: info.truncation,
                posix_timestamp: ts(info.timestamp_ns),
                posix_thread_id: info.thread as libc::pthread_t,
            };
            // SAFETY: optional out-pointer.
            if let Some(l) = unsafe { data_len.as_mut() } {
                *l = n;
            }
            *u = 0;
            0
        }
        Ok(None) => {
            // SAFETY: optional out-pointer.
            if let Some(l) = unsafe { data_len.as_mut() } {
                *l = 0;
            }
            *u = 1;
            0
        }
        Err(e) => e,
    }
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_getnext_event(
    trid: TraceId,
    event: *mut PosixTraceEventInfo,
    data: *mut c_void,
    num_bytes: usize,
    data_len: *mut usize,
    unavailable: *mut c_int,
) -> c_int {
    // SAFETY: pointers forwarded from the caller.
    unsafe {
        read(
            trid,
            event,
            data,
            num_bytes,
            data_len,
            unavailable,
            Wait::Forever,
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_trygetnext_event(
    trid: TraceId,
    event: *mut PosixTraceEventInfo,
    data: *mut c_void,
    num_bytes: usize,
    data_len: *mut usize,
    unavailable: *mut c_int,
) -> c_int {
    // SAFETY: pointers forwarded from the caller.
    unsafe {
        read(
            trid,
            event,
            data,
            num_bytes,
            data_len,
            unavailable,
            Wait::Never,
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_timedgetnext_event(
    trid: TraceId,
    event: *mut PosixTraceEventInfo,
    data: *mut c_void,
    num_bytes: usize,
    data_len: *mut usize,
    unavailable: *mut c_int,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: caller-provided deadline; null is an invalid deadline.
    let deadline = unsafe { abstime.as_ref() }
        .copied()
        .unwrap_or(libc::timespec {
            tv_sec: 0,
            tv_nsec: -1,
        });
    // SAFETY: pointers forwarded from the caller.
    unsafe {
        read(
            trid,
            event,
            data,
            num_bytes,
            data_len,
            unavailable,
            Wait::Until(deadline),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream-min-size too large to lay out (`size_t` is unbounded in the
    /// C API) fails `posix_trace_create` with ENOMEM instead of a panic
    /// inside `extern "C"` or a mapping smaller than its slots.
    #[test]
    fn create_with_a_huge_stream_size_is_enomem() {
        let mut attr = TraceAttrT {
            opaque: [0; TRACE_ATTR_T_SIZE],
        };
        let mut trid: TraceId = 0;
        // SAFETY: valid pointers to a local trace_attr_t and trace_id_t.
        unsafe {
            assert_eq!(posix_trace_attr_init(&mut attr), 0);
            for size in [usize::MAX, usize::MAX / 2 + 1, 1 << 60] {
                assert_eq!(posix_trace_attr_setstreamsize(&mut attr, size), 0);
                assert_eq!(posix_trace_create(0, &attr, &mut trid), libc::ENOMEM);
                assert_eq!(trid, 0, "out-parameter untouched on failure");
            }
            assert_eq!(posix_trace_attr_destroy(&mut attr), 0);
        }
    }
}
