//! The numeric values behind `<trace.h>`: policies, status values, event
//! type identifiers and limits. `include/trace.h` repeats them and a test in
//! `tracekit-posix-c` checks that both agree.
//!
//! Numbering follows VxWorks 6: the "normal" states are 0, POSIX system event
//! types are 512..=519, user event types start at 1024 with the unnamed user
//! event. That makes `posix_trace_eventset_fill` a range operation and an
//! event set a fixed bitset.

/// Stream operating mode.
pub const POSIX_TRACE_SUSPENDED: i32 = 0;
pub const POSIX_TRACE_RUNNING: i32 = 1;
/// Full status of a stream or log.
pub const POSIX_TRACE_NOT_FULL: i32 = 0;
pub const POSIX_TRACE_FULL: i32 = 1;
/// Overrun status of a stream or log (NO_OVERRUN is 0, so "reset to zero
/// after read" and "reset to NO_OVERRUN" are the same thing).
pub const POSIX_TRACE_NO_OVERRUN: i32 = 0;
pub const POSIX_TRACE_OVERRUN: i32 = 1;
/// Flush status.
pub const POSIX_TRACE_NOT_FLUSHING: i32 = 0;
pub const POSIX_TRACE_FLUSHING: i32 = 1;

/// Stream-full and log-full policies.
pub const POSIX_TRACE_LOOP: i32 = 1;
pub const POSIX_TRACE_UNTIL_FULL: i32 = 2;
/// Stream-full policy of a stream with log only.
pub const POSIX_TRACE_FLUSH: i32 = 3;
/// Log-full policy only.
pub const POSIX_TRACE_APPEND: i32 = 4;

/// Inheritance policies (TRI).
pub const POSIX_TRACE_CLOSE_FOR_CHILD: i32 = 0;
pub const POSIX_TRACE_INHERITED: i32 = 1;

/// Truncation status of a read event.
pub const POSIX_TRACE_NOT_TRUNCATED: i32 = 0;
pub const POSIX_TRACE_TRUNCATED_RECORD: i32 = 1;
pub const POSIX_TRACE_TRUNCATED_READ: i32 = 2;

/// `what` of `posix_trace_eventset_fill`.
pub const POSIX_TRACE_WOPID_EVENTS: i32 = 0;
pub const POSIX_TRACE_SYSTEM_EVENTS: i32 = 1;
pub const POSIX_TRACE_ALL_EVENTS: i32 = 2;

/// `how` of `posix_trace_set_filter`.
pub const POSIX_TRACE_SET_EVENTSET: i32 = 1;
pub const POSIX_TRACE_ADD_EVENTSET: i32 = 2;
pub const POSIX_TRACE_SUB_EVENTSET: i32 = 3;

/// System event types.
pub const POSIX_TRACE_ERROR: u32 = 512;
pub const POSIX_TRACE_START: u32 = 513;
pub const POSIX_TRACE_STOP: u32 = 514;
pub const POSIX_TRACE_OVERFLOW: u32 = 515;
pub const POSIX_TRACE_RESUME: u32 = 516;
pub const POSIX_TRACE_FILTER: u32 = 517;
pub const POSIX_TRACE_FLUSH_START: u32 = 518;
pub const POSIX_TRACE_FLUSH_STOP: u32 = 519;
/// The user event type returned once the user table is full.
pub const POSIX_TRACE_UNNAMED_USEREVENT: u32 = 1024;

/// First and one-past-last POSIX system event type.
pub const SYSTEM_EVENT_FIRST: u32 = 512;
pub const SYSTEM_EVENT_END: u32 = 520;
/// First user event type (the unnamed one) and the number of user types,
/// including the unnamed one.
pub const USER_EVENT_FIRST: u32 = 1024;
pub const TRACE_USER_EVENT_MAX: usize = 256;
/// One past the largest event type identifier.
pub const EVENT_ID_END: u32 = USER_EVENT_FIRST + TRACE_USER_EVENT_MAX as u32;

/// Longest event name, excluding the NUL.
pub const TRACE_EVENT_NAME_MAX: usize = 63;
/// Longest trace name and generation version, excluding the NUL.
pub const TRACE_NAME_MAX: usize = 31;
/// Streams that one process may have open at once (created, opened or
/// attached to as a traced process).
pub const TRACE_SYS_MAX: usize = 8;

/// Names of the system event types, as the standard spells them.
pub const SYSTEM_EVENT_NAMES: [(u32, &str); 9] = [
    (POSIX_TRACE_ERROR, "posix_trace_error"),
    (POSIX_TRACE_START, "posix_trace_start"),
    (POSIX_TRACE_STOP, "posix_trace_stop"),
    (POSIX_TRACE_OVERFLOW, "posix_trace_overflow"),
    (POSIX_TRACE_RESUME, "posix_trace_resume"),
    (POSIX_TRACE_FILTER, "posix_trace_filter"),
    (POSIX_TRACE_FLUSH_START, "posix_trace_flush_start"),
    (POSIX_TRACE_FLUSH_STOP, "posix_trace_flush_stop"),
    (
        POSIX_TRACE_UNNAMED_USEREVENT,
        "posix_trace_unnamed_userevent",
    ),
];

/// Name of a predefined event type.
pub fn system_event_name(id: u32) -> Option<&'static str> {
    SYSTEM_EVENT_NAMES
        .iter()
        .find(|(i, _)| *i == id)
        .map(|(_, n)| *n)
}
