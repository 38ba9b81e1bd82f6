//! Writers: FDR version 5 (laid out as compiler-rt 14 writes it, so
//! llvm-xray 14 reads it) and basic mode version 3.

use std::io::Write;

use tracekit_core::{Error, Position, Result, Warnings};

use crate::fdr::kind;
use crate::header::{write_header, Endian, FileHeader, LogKind};
use crate::record::{Record, RecordKind};
use crate::trace::Trace;

fn io(e: std::io::Error) -> Error {
    Error::io(None, e)
}

/// Default FDR buffer size when the source does not say (LLVM 14's).
pub const DEFAULT_BUFFER_SIZE: u64 = 16384;

/// Largest buffer size taken over from a source header.
pub const MAX_BUFFER_SIZE: u64 = 256 << 20;

/// Writes FDR v5 buffers, one thread at a time.
pub struct FdrWriter<W: Write> {
    out: W,
    endian: Endian,
    buffer_size: usize,
    body: Vec<u8>,
    tid: Option<u32>,
    pid: u32,
    cpu: u16,
    base_tsc: u64,
    open: bool,
    pub warnings: Warnings,
}

impl<W: Write> FdrWriter<W> {
    /// Writes the file header; `header` gives frequency, flags, byte order.
    pub fn new(mut out: W, header: &FileHeader) -> Result<Self> {
        // The source's buffer size when plausible (the header is input).
        let buffer_size = if header.kind == LogKind::Fdr
            && (64..=MAX_BUFFER_SIZE).contains(&header.buffer_size)
        {
            header.buffer_size
        } else {
            DEFAULT_BUFFER_SIZE
        };
        // Always little-endian, as compiler-rt writes it on x86: in a
        // big-endian FDR log the record-type bit of a function record is
        // read from its first byte (as llvm-xray does), which holds function
        // id bits there, so ids with bit 20 set would read as metadata.
        let h = FileHeader {
            version: 5,
            kind: LogKind::Fdr,
            buffer_size,
            endian: Endian::Little,
            ..*header
        };
        let mut buf = Vec::with_capacity(32);
        write_header(&h, &mut buf);
        out.write_all(&buf).map_err(io)?;
        Ok(FdrWriter {
            out,
            endian: h.endian,
            buffer_size: buffer_size as usize,
            body: Vec::with_capacity((buffer_size as usize).min(1 << 20)),
            tid: None,
            pid: 0,
            cpu: 0,
            base_tsc: 0,
            open: false,
            warnings: Warnings::default(),
        })
    }

    fn meta(&mut self, k: u8, body: &[u8]) {
        self.body.push((k << 1) | 1);
        self.body.extend_from_slice(body);
        self.body.extend(std::iter::repeat_n(0u8, 15 - body.len()));
    }

    fn flush_buffer(&mut self) -> Result<()> {
        if !self.open {
            return Ok(());
        }
        let mut ext = Vec::with_capacity(16);
        ext.push((kind::BUFFER_EXTENTS << 1) | 1);
        self.endian.put_u64(&mut ext, self.body.len() as u64);
        ext.extend_from_slice(&[0u8; 7]);
        self.out.write_all(&ext).map_err(io)?;
        self.out.write_all(&self.body).map_err(io)?;
        self.body.clear();
        self.open = false;
        Ok(())
    }

    fn start_buffer(&mut self, r: &Record<'_>) {
        let e = self.endian;
        let mut b = Vec::with_capacity(15);
        e.put_u32(&mut b, r.tid);
        self.meta(kind::NEW_BUFFER, &b);
        // WallClock: the record's time as seconds/microseconds of the
        // counter (the original wall clock is not kept per record).
        b.clear();
        e.put_u64(&mut b, 0);
        e.put_u32(&mut b, 0);
        self.meta(kind::WALL_CLOCK, &b);
        b.clear();
        e.put_u32(&mut b, r.pid);
        self.meta(kind::PID, &b);
        self.new_cpu(r.cpu, r.tsc);
        self.open = true;
    }

    fn new_cpu(&mut self, cpu: u16, tsc: u64) {
        let mut b = Vec::with_capacity(15);
        self.endian.put_u16(&mut b, cpu);
        self.endian.put_u64(&mut b, tsc);
        self.meta(kind::NEW_CPU_ID, &b);
        self.cpu = cpu;
        self.base_tsc = tsc;
    }

    /// Adds a record; records of one thread must come together and in the
    /// order they should be read back.
    pub fn record(&mut self, r: &Record<'_>) -> Result<()> {
        let size = match r.kind {
            RecordKind::CustomEvent | RecordKind::TypedEvent => 16 + r.data.len(),
            _ => 8 + 16 * r.args.len(),
        };
        // Worst case: NewCPUId or TSCWrap in front.
        let need = size + 16;
        let new_thread = self.tid != Some(r.tid) || self.pid != r.pid;
        if new_thread || (self.open && self.body.len() + need > self.buffer_size) {
            self.flush_buffer()?;
        }
        self.tid = Some(r.tid);
        self.pid = r.pid;
        if !self.open {
            self.start_buffer(r);
        }
        let e = self.endian;
        if r.cpu != self.cpu {
            self.new_cpu(r.cpu, r.tsc);
        }
        match r.kind {
            RecordKind::CustomEvent | RecordKind::TypedEvent => {
                if r.data.is_empty() || r.data.len() > i32::MAX as usize {
                    self.warnings.push(
                        Position::Unknown,
                        "event with an empty or oversized payload not written (FDR needs 1..2^31 bytes)",
                    );
                    return Ok(());
                }
                let delta = r.tsc.wrapping_sub(self.base_tsc) as i64;
                let delta = if r.tsc < self.base_tsc || delta > i64::from(i32::MAX) {
                    self.tsc_wrap(r.tsc);
                    0
                } else {
                    delta as i32
                };
                self.base_tsc = r.tsc;
                let mut b = Vec::with_capacity(15);
                e.put_u32(&mut b, r.data.len() as u32);
                e.put_u32(&mut b, delta as u32);
                let k = if r.kind == RecordKind::TypedEvent {
                    e.put_u16(&mut b, r.record_type);
                    kind::TYPED_EVENT
                } else {
                    kind::CUSTOM_EVENT
                };
                self.meta(k, &b);
                self.body.extend_from_slice(&r.data);
            }
            _ => {
                if !(0..1 << 28).contains(&r.func_id) {
                    self.warnings.push(
                        Position::Unknown,
                        format!(
                            "function id {} does not fit FDR's 28 bits; record not written",
                            r.func_id
                        ),
                    );
                    return Ok(());
                }
                let delta = if r.tsc < self.base_tsc
                    || r.tsc - self.base_tsc > u64::from(i32::MAX as u32)
                {
                    self.tsc_wrap(r.tsc);
                    0
                } else {
                    (r.tsc - self.base_tsc) as u32
                };
                self.base_tsc = r.tsc;
                let action: u32 = match r.kind {
                    RecordKind::Enter if r.args.is_empty() => 0,
                    RecordKind::Enter | RecordKind::EnterArg => 3,
                    RecordKind::Exit => 1,
                    _ => 2,
                };
                e.put_u32(&mut self.body, ((r.func_id as u32) << 4) | (action << 1));
                e.put_u32(&mut self.body, delta);
                for &a in &r.args {
                    let mut b = Vec::with_capacity(15);
                    e.put_u64(&mut b, a);
                    self.meta(kind::CALL_ARGUMENT, &b);
                }
            }
        }
        Ok(())
    }

    fn tsc_wrap(&mut self, tsc: u64) {
        let mut b = Vec::with_capacity(15);
        self.endian.put_u64(&mut b, tsc);
        self.meta(kind::TSC_WRAP, &b);
        self.base_tsc = tsc;
    }

    pub fn finish(mut self) -> Result<(W, Warnings)> {
        self.flush_buffer()?;
        Ok((self.out, self.warnings))
    }
}

/// Writes basic-mode records: version 3, or the input's version when it
/// is a basic log already (as llvm-xray's `-f raw` keeps its input's
/// header, so a basic log round-trips byte for byte).
pub struct BasicWriter<W: Write> {
    out: W,
    endian: Endian,
    version: u16,
    written: u64,
    pub dropped_events: u64,
}

impl<W: Write> BasicWriter<W> {
    pub fn new(mut out: W, header: &FileHeader) -> Result<Self> {
        let version = match header.kind {
            LogKind::Basic => header.version.clamp(1, 3),
            LogKind::Fdr => 3,
        };
        let h = FileHeader {
            version,
            kind: LogKind::Basic,
            buffer_size: 0,
            endian: Endian::Little,
            ..*header
        };
        let mut buf = Vec::with_capacity(32);
        write_header(&h, &mut buf);
        out.write_all(&buf).map_err(io)?;
        Ok(BasicWriter {
            out,
            endian: h.endian,
            version,
            written: 0,
            dropped_events: 0,
        })
    }

    pub fn record(&mut self, r: &Record<'_>) -> Result<()> {
        let e = self.endian;
        let t: u8 = match r.kind {
            RecordKind::Enter if r.args.is_empty() => 0,
            RecordKind::Enter | RecordKind::EnterArg => 3,
            RecordKind::Exit => 1,
            RecordKind::TailExit => 2,
            RecordKind::CustomEvent | RecordKind::TypedEvent => {
                self.dropped_events += 1;
                return Ok(());
            }
        };
        let mut b = Vec::with_capacity(32 * (1 + r.args.len()));
        e.put_u16(&mut b, 0);
        b.push(r.cpu as u8);
        b.push(t);
        e.put_u32(&mut b, r.func_id as u32);
        e.put_u64(&mut b, r.tsc);
        e.put_u32(&mut b, r.tid);
        // Versions before 3 have no process id (padding).
        e.put_u32(&mut b, if self.version >= 3 { r.pid } else { 0 });
        b.extend_from_slice(&[0u8; 8]);
        for &a in &r.args {
            e.put_u16(&mut b, 1);
            b.extend_from_slice(&[0u8; 2]);
            e.put_u32(&mut b, r.func_id as u32);
            e.put_u32(&mut b, r.tid);
            e.put_u32(&mut b, r.pid);
            e.put_u64(&mut b, a);
            b.extend_from_slice(&[0u8; 8]);
        }
        self.written += 1;
        self.out.write_all(&b).map_err(io)
    }

    pub fn finish(self) -> Result<(W, Warnings)> {
        let mut w = Warnings::default();
        if self.dropped_events > 0 {
            w.push(
                Position::Unknown,
                format!(
                    "{} custom/typed events dropped (basic mode cannot hold events)",
                    self.dropped_events
                ),
            );
        }
        if self.written == 0 {
            w.push(
                Position::Unknown,
                "no function records: the basic log holds only a header, which llvm-xray cannot read",
            );
        }
        Ok((self.out, w))
    }
}

/// Re-encodes a trace as FDR v5 (threads one after the other, load order).
pub fn convert_to_fdr<W: Write>(trace: &Trace<'_>, out: W) -> Result<Warnings> {
    let mut w = FdrWriter::new(out, &trace.header)?;
    let mut warnings = trace.warnings.clone();
    let mut records = trace.records();
    for r in records.by_ref() {
        w.record(&r?)?;
    }
    warnings.extend(records.warnings());
    let (mut out, ww) = w.finish()?;
    out.flush().map_err(io)?;
    warnings.extend(ww);
    Ok(warnings)
}

/// Re-encodes a trace as a basic-mode log (see [`BasicWriter`]; records in time order, as
/// llvm-xray's `convert -output-format=raw` does).
pub fn convert_to_basic<W: Write>(trace: &Trace<'_>, out: W) -> Result<Warnings> {
    let mut w = BasicWriter::new(out, &trace.header)?;
    let mut warnings = trace.warnings.clone();
    let mut records = trace.sorted_records();
    for r in records.by_ref() {
        w.record(&r?)?;
    }
    warnings.extend(records.warnings());
    let (mut out, ww) = w.finish()?;
    out.flush().map_err(io)?;
    warnings.extend(ww);
    Ok(warnings)
}
