//! Trace stream attributes (`trace_attr_t`).

use crate::consts::*;

/// Default stream-min-size: 4 MiB of event slots.
pub const DEFAULT_STREAM_SIZE: u64 = 4 << 20;
/// Default max-data-size of a user event payload.
pub const DEFAULT_MAX_DATA_SIZE: u64 = 256;
/// Largest max-data-size we accept (a log block must hold one record).
pub const MAX_MAX_DATA_SIZE: u64 = 16 << 10;
/// Default log-max-size: 64 MiB.
pub const DEFAULT_LOG_SIZE: u64 = 64 << 20;
/// The generation-version string.
pub const GENVERSION: &str = "tracekit1";

const ATTR_MAGIC: u32 = 0x5452_4154; // "TATR"

/// The attributes object. The C `trace_attr_t` is an opaque 256-byte,
/// 8-aligned block holding exactly this struct.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceAttr {
    magic: u32,
    pub stream_policy: i32,
    pub log_policy: i32,
    pub inheritance: i32,
    /// stream-full-policy was set explicitly (else it follows the log).
    pub stream_policy_set: u32,
    _pad: u32,
    pub name: [u8; TRACE_NAME_MAX + 1],
    pub genversion: [u8; TRACE_NAME_MAX + 1],
    pub create_time_sec: i64,
    pub create_time_nsec: i64,
    pub clockres_nsec: i64,
    pub stream_size: u64,
    pub max_data_size: u64,
    pub log_size: u64,
}

/// Size of the C `trace_attr_t`.
pub const TRACE_ATTR_T_SIZE: usize = 256;
const _: () = assert!(std::mem::size_of::<TraceAttr>() <= TRACE_ATTR_T_SIZE);

impl Default for TraceAttr {
    fn default() -> Self {
        let mut genversion = [0u8; TRACE_NAME_MAX + 1];
        genversion[..GENVERSION.len()].copy_from_slice(GENVERSION.as_bytes());
        TraceAttr {
            magic: ATTR_MAGIC,
            stream_policy: POSIX_TRACE_LOOP,
            log_policy: POSIX_TRACE_LOOP,
            inheritance: POSIX_TRACE_CLOSE_FOR_CHILD,
            stream_policy_set: 0,
            _pad: 0,
            name: [0; TRACE_NAME_MAX + 1],
            genversion,
            create_time_sec: 0,
            create_time_nsec: 0,
            clockres_nsec: crate::clock::resolution_ns(),
            stream_size: DEFAULT_STREAM_SIZE,
            max_data_size: DEFAULT_MAX_DATA_SIZE,
            log_size: DEFAULT_LOG_SIZE,
        }
    }
}

impl TraceAttr {
    /// Was this object initialised by `posix_trace_attr_init` (and not destroyed)?
    pub fn is_valid(&self) -> bool {
        self.magic == ATTR_MAGIC
    }

    /// `posix_trace_attr_destroy`.
    pub fn invalidate(&mut self) {
        self.magic = 0;
    }

    pub fn name_str(&self) -> &str {
        cstr_field(&self.name)
    }

    /// Sets the trace name, truncated to [`TRACE_NAME_MAX`] bytes.
    pub fn set_name(&mut self, name: &[u8]) {
        self.name = [0; TRACE_NAME_MAX + 1];
        let n = name.len().min(TRACE_NAME_MAX);
        self.name[..n].copy_from_slice(&name[..n]);
    }

    /// The stream-full-policy in force for a stream with or without log.
    pub fn effective_stream_policy(&self, with_log: bool) -> i32 {
        if self.stream_policy_set == 0 && with_log {
            POSIX_TRACE_FLUSH
        } else {
            self.stream_policy
        }
    }

    pub fn set_stream_policy(&mut self, policy: i32) -> bool {
        if !matches!(
            policy,
            POSIX_TRACE_LOOP | POSIX_TRACE_UNTIL_FULL | POSIX_TRACE_FLUSH
        ) {
            return false;
        }
        self.stream_policy = policy;
        self.stream_policy_set = 1;
        true
    }

    pub fn set_log_policy(&mut self, policy: i32) -> bool {
        if !matches!(
            policy,
            POSIX_TRACE_LOOP | POSIX_TRACE_UNTIL_FULL | POSIX_TRACE_APPEND
        ) {
            return false;
        }
        self.log_policy = policy;
        true
    }

    pub fn set_inheritance(&mut self, policy: i32) -> bool {
        if !matches!(policy, POSIX_TRACE_CLOSE_FOR_CHILD | POSIX_TRACE_INHERITED) {
            return false;
        }
        self.inheritance = policy;
        true
    }

    pub fn set_max_data_size(&mut self, size: u64) -> bool {
        if size > MAX_MAX_DATA_SIZE {
            return false;
        }
        self.max_data_size = size;
        true
    }
}

/// The text of a NUL-padded byte field.
pub fn cstr_field(bytes: &[u8]) -> &str {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    std::str::from_utf8(&bytes[..end]).unwrap_or("")
}
