//! FDR ("flight data recorder") logs, record level: framing of the byte
//! stream into function and metadata records, with the versions' block
//! grammar and BufferExtents handling. No timestamps are reconstructed
//! here (see [`crate::trace`]).

use tracekit_core::{Error, Position, Result, Warnings};

use crate::header::{FileHeader, HEADER_LEN};

/// What a function record says happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FunctionAction {
    Enter,
    Exit,
    TailExit,
    EnterArg,
}

impl From<FunctionAction> for crate::record::RecordKind {
    fn from(a: FunctionAction) -> Self {
        use crate::record::RecordKind;
        match a {
            FunctionAction::Enter => RecordKind::Enter,
            FunctionAction::Exit => RecordKind::Exit,
            FunctionAction::TailExit => RecordKind::TailExit,
            FunctionAction::EnterArg => RecordKind::EnterArg,
        }
    }
}

impl FunctionAction {
    pub fn from_code(code: u8) -> Option<FunctionAction> {
        Some(match code {
            0 => FunctionAction::Enter,
            1 => FunctionAction::Exit,
            2 => FunctionAction::TailExit,
            3 => FunctionAction::EnterArg,
            _ => return None,
        })
    }
    pub fn code(self) -> u8 {
        match self {
            FunctionAction::Enter => 0,
            FunctionAction::Exit => 1,
            FunctionAction::TailExit => 2,
            FunctionAction::EnterArg => 3,
        }
    }
}

/// Metadata record kinds (the first byte is `kind << 1 | 1`).
pub mod kind {
    pub const NEW_BUFFER: u8 = 0;
    pub const END_OF_BUFFER: u8 = 1;
    pub const NEW_CPU_ID: u8 = 2;
    pub const TSC_WRAP: u8 = 3;
    pub const WALL_CLOCK: u8 = 4;
    pub const CUSTOM_EVENT: u8 = 5;
    pub const CALL_ARGUMENT: u8 = 6;
    pub const BUFFER_EXTENTS: u8 = 7;
    pub const TYPED_EVENT: u8 = 8;
    pub const PID: u8 = 9;
}

/// One FDR record as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FdrRecord<'a> {
    Function {
        action: FunctionAction,
        func_id: u32,
        delta: u32,
    },
    NewBuffer {
        tid: i32,
    },
    EndOfBuffer,
    NewCpuId {
        cpu: u16,
        tsc: u64,
    },
    TscWrap {
        base: u64,
    },
    WallClock {
        seconds: u64,
        micros: u32,
    },
    /// Versions 1-4: absolute timestamp (and, from v4, the CPU).
    CustomEvent {
        size: i32,
        tsc: u64,
        cpu: u16,
        data: &'a [u8],
    },
    /// Version 5: timestamp delta, CPU from the last NewCPUId.
    CustomEventV5 {
        size: i32,
        delta: i32,
        data: &'a [u8],
    },
    TypedEvent {
        size: i32,
        delta: i32,
        event_type: u16,
        data: &'a [u8],
    },
    CallArgument {
        arg: u64,
    },
    BufferExtents {
        size: u64,
    },
    Pid {
        pid: i32,
    },
}

impl FdrRecord<'_> {
    /// Bytes the record occupies in the file, payload included.
    pub fn encoded_len(&self) -> usize {
        match self {
            FdrRecord::Function { .. } => 8,
            FdrRecord::CustomEvent { data, .. }
            | FdrRecord::CustomEventV5 { data, .. }
            | FdrRecord::TypedEvent { data, .. } => 16 + data.len(),
            _ => 16,
        }
    }
}

/// A record and where it starts in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord<'a> {
    pub offset: usize,
    pub record: FdrRecord<'a>,
    /// Version 1 only: the record lies in the unused tail of a buffer after
    /// its EndOfBuffer (uninitialised memory that happens to parse).
    pub garbage: bool,
}

/// Streams the records of an FDR log (or of a byte range of it).
#[derive(Clone)]
pub struct FdrReader<'a> {
    data: &'a [u8],
    header: FileHeader,
    pos: usize,
    end: usize,
    /// Bytes left in the current block according to BufferExtents
    /// (versions >= 3, where the extents are authoritative).
    budget: Option<u64>,
    block_start: usize,
    in_garbage: bool,
    garbage_end: usize,
    failed: bool,
    /// Reading one block found by the index: stop at the end of its
    /// extents (junk after it was reported by the index pass).
    single_block: bool,
    pub warnings: Warnings,
}

impl<'a> FdrReader<'a> {
    /// Reads the records after the file header.
    pub fn new(data: &'a [u8], header: FileHeader) -> Self {
        Self::range(data, header, HEADER_LEN.min(data.len()), data.len())
    }

    /// Reads the records of `data[start..end]` (a block found earlier).
    pub fn range(data: &'a [u8], header: FileHeader, start: usize, end: usize) -> Self {
        FdrReader {
            data,
            header,
            pos: start,
            end: end.min(data.len()),
            budget: None,
            block_start: start,
            in_garbage: false,
            garbage_end: 0,
            failed: false,
            single_block: false,
            warnings: Warnings::default(),
        }
    }

    /// Reads the one block at `data[start..end]`.
    pub fn block(data: &'a [u8], header: FileHeader, start: usize, end: usize) -> Self {
        let mut r = Self::range(data, header, start, end);
        r.single_block = true;
        r
    }

    /// The offset of the next record.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Start of the block being read (offset of its BufferExtents, or for
    /// version 1 of its NewBuffer).
    pub fn block_start(&self) -> usize {
        self.block_start
    }

    /// Consumes the next record if it is a plain function record (the
    /// common case, decoded without building a [`RawRecord`]): returns
    /// (action, function id, delta). Anything else is left for `next`.
    #[inline(always)]
    pub fn take_function(&mut self) -> Option<(FunctionAction, u32, u32)> {
        let at = self.pos;
        if self.in_garbage || at + 8 > self.end || self.data[at] & 1 != 0 {
            return None;
        }
        if let Some(b) = self.budget {
            if b < 8 {
                return None;
            }
        }
        let e = self.header.endian;
        let w0 = e.u32(self.data, at);
        let action = match (w0 >> 1) & 7 {
            0 => FunctionAction::Enter,
            1 => FunctionAction::Exit,
            2 => FunctionAction::TailExit,
            3 => FunctionAction::EnterArg,
            _ => return None,
        };
        if let Some(b) = self.budget.as_mut() {
            *b -= 8;
        }
        self.pos = at + 8;
        Some((action, w0 >> 4, e.u32(self.data, at + 4)))
    }

    /// Consumes the run of plain function records starting here (with the
    /// CallArguments that follow them), as `take_function` and
    /// `take_call_argument` would one by one, calling `f(kind, func_id,
    /// tsc)` with `tsc` accumulated from `*base_tsc`. Decodes fixed 8-byte
    /// chunks of one bounded slice, the byte order chosen once per run.
    /// Stops at anything else (left for `next`) or when `f` fails.
    /// `last_func` is the id of the last function record consumed.
    #[inline]
    pub fn take_function_run<F>(
        &mut self,
        base_tsc: &mut u64,
        last_func: &mut u32,
        f: &mut F,
    ) -> Result<()>
    where
        F: crate::record::FunctionSink,
    {
        if self.in_garbage || self.pos >= self.end {
            return Ok(());
        }
        let limit = match self.budget {
            Some(b) => (self.pos as u64).saturating_add(b).min(self.end as u64) as usize,
            None => self.end,
        };
        let run = &self.data[self.pos..limit];
        let (used, res) = match self.header.endian {
            crate::header::Endian::Little => function_run::<false, F>(run, base_tsc, last_func, f),
            crate::header::Endian::Big => function_run::<true, F>(run, base_tsc, last_func, f),
        };
        self.pos += used;
        if let Some(b) = self.budget.as_mut() {
            *b -= used as u64;
        }
        res
    }

    /// Consumes a CallArgument record if one comes next (they follow their
    /// enter-with-argument function record directly).
    #[inline]
    pub fn take_call_argument(&mut self) -> Option<u64> {
        let at = self.pos;
        if self.in_garbage || at + 16 > self.end || self.data[at] != (kind::CALL_ARGUMENT << 1) | 1
        {
            return None;
        }
        if let Some(b) = self.budget.as_mut() {
            if *b < 16 {
                return None;
            }
            *b -= 16;
        }
        self.pos = at + 16;
        Some(self.header.endian.u64(self.data, at + 1))
    }

    /// Jumps over the rest of the current block without decoding it, when
    /// the format says where the block ends (v3+ extents, v1 buffer size).
    /// Returns false when the block must be parsed record by record.
    pub fn skip_block_body(&mut self) -> bool {
        if self.header.version >= 3 {
            if let Some(b) = self.budget {
                let target = (self.pos as u64).saturating_add(b);
                if target <= self.end as u64 {
                    self.pos = target as usize;
                    self.budget = Some(0);
                    return true;
                }
            }
        } else if self.header.version == 1 && self.header.buffer_size > 0 {
            let target = (self.block_start as u64).saturating_add(self.header.buffer_size);
            if target <= self.end as u64 && target > self.pos as u64 {
                self.pos = target as usize;
                self.in_garbage = false;
                return true;
            }
        }
        false
    }

    fn fail(&mut self, at: usize, msg: String) -> Option<Result<RawRecord<'a>>> {
        self.failed = true;
        Some(Err(Error::malformed(Position::Offset(at as u64), msg)))
    }

    /// Skips the rest of a v1 buffer tail that does not parse.
    fn leave_garbage(&mut self, at: usize, why: &str) {
        let to = if self.garbage_end > at {
            self.garbage_end.min(self.end)
        } else {
            self.end
        };
        self.warnings.push(
            Position::Offset(at as u64),
            format!(
                "{} bytes after an EndOfBuffer record skipped ({why})",
                to - at
            ),
        );
        self.pos = to;
        self.in_garbage = false;
    }
}

impl<'a> Iterator for FdrReader<'a> {
    type Item = Result<RawRecord<'a>>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let e = self.header.endian;
        let version = self.header.version;
        loop {
            if self.failed {
                return None;
            }
            if self.budget == Some(0) {
                self.budget = None;
                if self.single_block {
                    self.pos = self.end;
                    return None;
                }
                if self.pos < self.end && self.data[self.pos] != 0x0f {
                    // The block is used up: the next one starts at the next
                    // BufferExtents introducer; anything before it is junk.
                    let from = self.pos;
                    match self.data[from..self.end].iter().position(|&b| b == 0x0f) {
                        Some(n) => {
                            self.warnings.push(
                                Position::Offset(from as u64),
                                format!("{n} bytes of junk between buffers skipped"),
                            );
                            self.pos = from + n;
                        }
                        None => {
                            self.warnings.push(
                                Position::Offset(from as u64),
                                format!(
                                    "{} trailing bytes after the last buffer ignored",
                                    self.end - from
                                ),
                            );
                            self.pos = self.end;
                        }
                    }
                }
            }
            if self.pos >= self.end {
                return None;
            }
            if self.in_garbage && self.garbage_end > 0 && self.pos >= self.garbage_end {
                self.in_garbage = false;
            }
            let at = self.pos;
            let d = &self.data[at..self.end];
            let first = d[0];
            let is_function = first & 1 == 0;
            let fixed = if is_function { 8 } else { 16 };
            if d.len() < fixed {
                if self.in_garbage {
                    self.leave_garbage(at, "truncated record");
                    continue;
                }
                if let Some(b) = self.budget {
                    if (b as usize) < fixed {
                        self.cut_block(at, b);
                        continue;
                    }
                }
                return self.fail(
                    at,
                    format!(
                        "truncated {} record: {} of {fixed} bytes present",
                        if is_function { "function" } else { "metadata" },
                        d.len()
                    ),
                );
            }
            if let Some(b) = self.budget {
                if (fixed as u64) > b {
                    self.cut_block(at, b);
                    continue;
                }
            }
            let record = if is_function {
                let w0 = e.u32(d, 0);
                let code = ((w0 >> 1) & 7) as u8;
                let Some(action) = FunctionAction::from_code(code) else {
                    if self.in_garbage {
                        self.leave_garbage(at, "unknown function record type");
                        continue;
                    }
                    return self.fail(at, format!("unknown function record type {code}"));
                };
                FdrRecord::Function {
                    action,
                    func_id: w0 >> 4,
                    delta: e.u32(d, 4),
                }
            } else {
                let k = first >> 1;
                match k {
                    kind::NEW_BUFFER => FdrRecord::NewBuffer {
                        tid: e.u32(d, 1) as i32,
                    },
                    kind::END_OF_BUFFER => {
                        if version >= 2 && !self.in_garbage {
                            return self.fail(
                                at,
                                format!(
                                    "EndOfBuffer record in a version {version} log (only version 1 has them)"
                                ),
                            );
                        }
                        FdrRecord::EndOfBuffer
                    }
                    kind::NEW_CPU_ID => FdrRecord::NewCpuId {
                        cpu: e.u16(d, 1),
                        tsc: e.u64(d, 3),
                    },
                    kind::TSC_WRAP => FdrRecord::TscWrap { base: e.u64(d, 1) },
                    kind::WALL_CLOCK => FdrRecord::WallClock {
                        seconds: e.u64(d, 1),
                        micros: e.u32(d, 9),
                    },
                    kind::CALL_ARGUMENT => FdrRecord::CallArgument { arg: e.u64(d, 1) },
                    kind::BUFFER_EXTENTS => FdrRecord::BufferExtents { size: e.u64(d, 1) },
                    kind::PID => FdrRecord::Pid {
                        pid: e.u32(d, 1) as i32,
                    },
                    kind::CUSTOM_EVENT | kind::TYPED_EVENT => {
                        let size = e.u32(d, 1) as i32;
                        if size <= 0 {
                            if self.in_garbage {
                                self.leave_garbage(at, "bad event size");
                                continue;
                            }
                            return self.fail(at, format!("event record with size {size}"));
                        }
                        let total = 16 + size as usize;
                        if let Some(b) = self.budget {
                            if total as u64 > b {
                                self.cut_block(at, b);
                                continue;
                            }
                        }
                        if d.len() < total {
                            if self.in_garbage {
                                self.leave_garbage(at, "event payload past the end");
                                continue;
                            }
                            return self.fail(
                                at,
                                format!(
                                    "event payload of {size} bytes runs past the end of the data ({} bytes left)",
                                    d.len() - 16
                                ),
                            );
                        }
                        let data = &d[16..total];
                        if k == kind::TYPED_EVENT {
                            FdrRecord::TypedEvent {
                                size,
                                delta: e.u32(d, 5) as i32,
                                event_type: e.u16(d, 9),
                                data,
                            }
                        } else if version >= 5 {
                            FdrRecord::CustomEventV5 {
                                size,
                                delta: e.u32(d, 5) as i32,
                                data,
                            }
                        } else {
                            FdrRecord::CustomEvent {
                                size,
                                tsc: e.u64(d, 5),
                                cpu: e.u16(d, 13),
                                data,
                            }
                        }
                    }
                    other => {
                        if self.in_garbage {
                            self.leave_garbage(at, "unknown metadata kind");
                            continue;
                        }
                        return self.fail(at, format!("unknown metadata record kind {other}"));
                    }
                }
            };
            let len = record.encoded_len();
            self.pos = at + len;
            let garbage = self.in_garbage;
            match record {
                FdrRecord::BufferExtents { size } if !garbage => {
                    self.block_start = at;
                    if version >= 3 {
                        self.budget = Some(size);
                    }
                }
                FdrRecord::NewBuffer { .. } => {
                    if version == 1 {
                        self.block_start = at;
                    }
                    self.in_garbage = false;
                    if let Some(b) = self.budget.as_mut() {
                        *b -= len as u64;
                    }
                    return Some(Ok(RawRecord {
                        offset: at,
                        record,
                        garbage: false,
                    }));
                }
                FdrRecord::EndOfBuffer if version == 1 && !garbage => {
                    self.in_garbage = true;
                    self.garbage_end = if self.header.buffer_size > 0 {
                        (self.block_start as u64).saturating_add(self.header.buffer_size) as usize
                    } else {
                        0
                    };
                }
                _ => {
                    if let Some(b) = self.budget.as_mut() {
                        *b -= len as u64;
                    }
                }
            }
            return Some(Ok(RawRecord {
                offset: at,
                record,
                garbage,
            }));
        }
    }
}

/// The loop of [`FdrReader::take_function_run`] over `run` (the bytes the
/// block may still use): returns the bytes consumed and the first error of
/// `f` (the record it failed on counts as consumed).
#[inline(always)]
fn function_run<const BIG: bool, F>(
    run: &[u8],
    base_tsc: &mut u64,
    last_func: &mut u32,
    f: &mut F,
) -> (usize, Result<()>)
where
    F: crate::record::FunctionSink,
{
    use crate::record::RecordKind;
    const CALL_ARGUMENT: u8 = (kind::CALL_ARGUMENT << 1) | 1;
    let word = |b: [u8; 4]| {
        if BIG {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        }
    };
    let mut pos = 0usize;
    let mut tsc = *base_tsc;
    let mut res = Ok(());
    while let Some(rec) = run.get(pos..pos + 8) {
        let rec: &[u8; 8] = match rec.try_into() {
            Ok(r) => r,
            Err(_) => break,
        };
        if rec[0] & 1 != 0 {
            break;
        }
        let w0 = word([rec[0], rec[1], rec[2], rec[3]]);
        let mut kind = match (w0 >> 1) & 7 {
            0 => RecordKind::Enter,
            1 => RecordKind::Exit,
            2 => RecordKind::TailExit,
            3 => RecordKind::EnterArg,
            _ => break,
        };
        pos += 8;
        tsc = tsc.wrapping_add(u64::from(word([rec[4], rec[5], rec[6], rec[7]])));
        *last_func = w0 >> 4;
        // Arguments follow their enter-with-argument record directly.
        while run.get(pos) == Some(&CALL_ARGUMENT) && pos + 16 <= run.len() {
            pos += 16;
            kind = RecordKind::EnterArg;
        }
        if let Err(e) = f.function(kind, (w0 >> 4) as i32, tsc) {
            res = Err(e);
            break;
        }
    }
    *base_tsc = tsc;
    (pos, res)
}

impl FdrReader<'_> {
    /// The block's extents end inside the record at `at`: the writer
    /// under-counted (LLVM 14 does so by 16 bytes per typed event). The
    /// bytes past the extents belong to the next block.
    fn cut_block(&mut self, at: usize, budget: u64) {
        self.warnings.push(
            Position::Offset(at as u64),
            format!(
                "buffer extents end {budget} bytes into a record: the rest of the block is missing from the file (the LLVM 14 runtime under-counts extents after typed events)"
            ),
        );
        self.pos = at + budget as usize;
        self.budget = Some(0);
    }
}
