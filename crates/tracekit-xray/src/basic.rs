//! Basic ("naive") mode logs: the header followed by 32-byte records.

use tracekit_core::{Error, Position, Result, Warnings};

use crate::header::{FileHeader, HEADER_LEN};
use crate::record::{Record, RecordKind};

/// Size of one basic-mode record.
pub const RECORD_LEN: usize = 32;

/// Streams the records of a basic-mode log in file order, with argument
/// payloads attached to the record they follow.
pub struct BasicReader<'a> {
    data: &'a [u8],
    header: FileHeader,
    pos: usize,
    end: usize,
    pending: Option<Record<'a>>,
    failed: bool,
    /// An error found after a complete record that had to be returned first.
    deferred: Option<Error>,
    /// See [`crate::trace::Trace::set_release`].
    pub release: Option<crate::trace::Release<'a>>,
    released_to: usize,
    pub warnings: Warnings,
}

impl<'a> BasicReader<'a> {
    pub fn new(data: &'a [u8], header: FileHeader) -> Self {
        let body = data.len().saturating_sub(HEADER_LEN);
        let whole = body - body % RECORD_LEN;
        let mut warnings = Warnings::default();
        if !body.is_multiple_of(RECORD_LEN) {
            warnings.push(
                Position::Offset((HEADER_LEN + whole) as u64),
                format!(
                    "{} trailing bytes do not form a whole 32-byte record (file truncated?) and were ignored",
                    body % RECORD_LEN
                ),
            );
        }
        BasicReader {
            data,
            header,
            pos: HEADER_LEN.min(data.len()),
            end: HEADER_LEN + whole,
            pending: None,
            failed: false,
            deferred: None,
            release: None,
            released_to: HEADER_LEN,
            warnings,
        }
    }

    /// Limits reading to the records in `data[start..end]` (a run found
    /// earlier; `start` and `end` are record boundaries).
    pub fn restrict(&mut self, start: usize, end: usize) {
        self.pos = start.max(HEADER_LEN);
        self.end = end.min(self.end);
        self.warnings = Warnings::default();
    }

    /// Number of 32-byte records in the file (payloads included).
    pub fn record_slots(&self) -> usize {
        (self.end - HEADER_LEN.min(self.end)) / RECORD_LEN
    }

    fn parse(&mut self, at: usize) -> Result<Option<Record<'a>>> {
        let e = self.header.endian;
        let d = &self.data[at..at + RECORD_LEN];
        let record_type = e.u16(d, 0);
        match record_type {
            0 => {
                let kind = match d[3] {
                    0 => RecordKind::Enter,
                    1 => RecordKind::Exit,
                    2 => RecordKind::TailExit,
                    3 => RecordKind::EnterArg,
                    t => {
                        return Err(Error::malformed(
                            Position::Offset(at as u64),
                            format!("unknown function record type {t}"),
                        ))
                    }
                };
                Ok(Some(Record {
                    record_type: 0,
                    cpu: u16::from(d[2]),
                    kind,
                    func_id: e.u32(d, 4) as i32,
                    tsc: e.u64(d, 8),
                    tid: e.u32(d, 16),
                    pid: if self.header.version >= 3 {
                        e.u32(d, 20)
                    } else {
                        0
                    },
                    args: Vec::new(),
                    data: std::borrow::Cow::Borrowed(&[]),
                }))
            }
            1 => {
                let func_id = e.u32(d, 4) as i32;
                let tid = e.u32(d, 8);
                let pid = e.u32(d, 12);
                let arg = e.u64(d, 16);
                match self.pending.as_mut() {
                    Some(p)
                        if p.func_id == func_id
                            && p.tid == tid
                            && (self.header.version < 3 || p.pid == pid) =>
                    {
                        p.args.push(arg);
                    }
                    _ => self.warnings.push(
                        Position::Offset(at as u64),
                        format!(
                            "argument payload for function {func_id}, thread {tid} does not follow a record of that call; dropped"
                        ),
                    ),
                }
                Ok(None)
            }
            t => Err(Error::malformed(
                Position::Offset(at as u64),
                format!("unknown basic-mode record type {t}"),
            )),
        }
    }
}

impl<'a> Iterator for BasicReader<'a> {
    type Item = Result<Record<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        while self.pos < self.end {
            let at = self.pos;
            if let Some(f) = self.release {
                const STRETCH: usize = 8 << 20;
                if at >= self.released_to + STRETCH {
                    f(self.released_to, at - self.released_to);
                    self.released_to = at;
                }
            }
            self.pos += RECORD_LEN;
            match self.parse(at) {
                Ok(Some(r)) => {
                    if let Some(done) = self.pending.replace(r) {
                        return Some(Ok(done));
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    self.failed = true;
                    // The complete record before the bad one is still good.
                    if let Some(done) = self.pending.take() {
                        self.pos = self.end;
                        self.failed = false;
                        self.deferred = Some(e);
                        return Some(Ok(done));
                    }
                    return Some(Err(e));
                }
            }
        }
        if let Some(e) = self.deferred.take() {
            self.failed = true;
            return Some(Err(e));
        }
        self.pending.take().map(Ok)
    }
}
