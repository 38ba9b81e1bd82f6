//! The decoded, time-stamped record both log modes turn into (the
//! equivalent of llvm-xray's `XRayRecord`).

/// What a record says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordKind {
    Enter,
    Exit,
    TailExit,
    EnterArg,
    CustomEvent,
    TypedEvent,
}

impl RecordKind {
    /// The name llvm-xray's YAML uses.
    pub fn yaml_name(self) -> &'static str {
        match self {
            RecordKind::Enter => "function-enter",
            RecordKind::Exit => "function-exit",
            RecordKind::TailExit => "function-tail-exit",
            RecordKind::EnterArg => "function-enter-arg",
            RecordKind::CustomEvent => "custom-event",
            RecordKind::TypedEvent => "typed-event",
        }
    }
    pub fn is_entry(self) -> bool {
        matches!(self, RecordKind::Enter | RecordKind::EnterArg)
    }
    pub fn is_exit(self) -> bool {
        matches!(self, RecordKind::Exit | RecordKind::TailExit)
    }
    pub fn is_event(self) -> bool {
        matches!(self, RecordKind::CustomEvent | RecordKind::TypedEvent)
    }
}

/// One record with its absolute timestamp and thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<'a> {
    /// llvm-xray's `RecordType`: the type of the last typed event of the
    /// thread (0 before any); kept for YAML fidelity.
    pub record_type: u16,
    pub cpu: u16,
    pub kind: RecordKind,
    /// Function id; for events, the id of the thread's previous function
    /// record (as llvm-xray reports it).
    pub func_id: i32,
    pub tsc: u64,
    pub tid: u32,
    pub pid: u32,
    pub args: Vec<u64>,
    /// Event payload (empty for function records).
    pub data: std::borrow::Cow<'a, [u8]>,
}

/// A consumer of function records only (`account`, `stack`): called with
/// each one's kind, function id and timestamp, in a thread's order.
pub trait FunctionSink {
    fn function(&mut self, kind: RecordKind, func_id: i32, tsc: u64) -> tracekit_core::Result<()>;
}

impl<F: FnMut(RecordKind, i32, u64) -> tracekit_core::Result<()>> FunctionSink for F {
    #[inline(always)]
    fn function(&mut self, kind: RecordKind, func_id: i32, tsc: u64) -> tracekit_core::Result<()> {
        self(kind, func_id, tsc)
    }
}

/// The warning for exits set aside because their entries are not in the
/// log (binary logs: recording began mid-call, or FDR mode's ring reused
/// the oldest buffers once `buffer_max` was reached).
pub fn orphan_exits_message(n: u64) -> String {
    format!(
        "{n} exits without their entry set aside: the log starts in the middle of these calls (recording began inside them, or FDR mode reused its oldest buffers once buffer_max was reached)"
    )
}

/// The warning for calls still open when the records end.
pub fn open_calls_message(n: u64) -> String {
    format!(
        "{n} calls without an exit at the end of the log set aside (still running when the log was written)"
    )
}
