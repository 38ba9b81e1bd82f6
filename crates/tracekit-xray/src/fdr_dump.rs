//! `fdr-dump`: llvm-xray's record-level listing of an FDR log, byte for
//! byte (flat, or per block with `-verify`).

use std::io::Write;

use tracekit_core::{Error, Result, Warnings};

use crate::fdr::{FdrReader, FdrRecord, FunctionAction};
use crate::trace::Trace;

fn io(e: std::io::Error) -> Error {
    Error::io(None, e)
}

/// Writes one record the way llvm-xray's RecordPrinter does (no newline).
pub fn write_record<W: Write + ?Sized>(out: &mut W, r: &FdrRecord<'_>) -> std::io::Result<()> {
    match *r {
        FdrRecord::BufferExtents { size } => write!(out, "<Buffer: size = {size} bytes>"),
        FdrRecord::WallClock { seconds, micros } => {
            write!(out, "<Wall Time: seconds = {seconds}.{micros:06}>")
        }
        FdrRecord::NewCpuId { cpu, tsc } => write!(out, "<CPU: id = {cpu}, tsc = {tsc}>"),
        FdrRecord::TscWrap { base } => write!(out, "<TSC Wrap: base = {base}>"),
        FdrRecord::CustomEvent {
            size,
            tsc,
            cpu,
            data,
        } => {
            write!(
                out,
                "<Custom Event: tsc = {tsc}, cpu = {cpu}, size = {size}, data = '"
            )?;
            out.write_all(data)?;
            out.write_all(b"'>")
        }
        FdrRecord::CustomEventV5 { size, delta, data } => {
            write!(
                out,
                "<Custom Event: delta = +{delta}, size = {size}, data = '"
            )?;
            out.write_all(data)?;
            out.write_all(b"'>")
        }
        FdrRecord::TypedEvent {
            size,
            delta,
            event_type,
            data,
        } => {
            // llvm-xray leaves this one without the closing '>'.
            write!(
                out,
                "<Typed Event: delta = +{delta}, type = {event_type}, size = {size}, data = '"
            )?;
            out.write_all(data)?;
            out.write_all(b"'")
        }
        FdrRecord::CallArgument { arg } => {
            write!(out, "<Call Argument: data = {arg} (hex = {arg:#x})>")
        }
        FdrRecord::Pid { pid } => write!(out, "<PID: {pid}>"),
        FdrRecord::NewBuffer { tid } => write!(out, "<Thread ID: {tid}>"),
        FdrRecord::EndOfBuffer => write!(out, "<End of Buffer>"),
        FdrRecord::Function {
            action,
            func_id,
            delta,
        } => {
            let what = match action {
                FunctionAction::Enter => "Function Enter",
                FunctionAction::EnterArg => "Function Enter With Arg",
                FunctionAction::Exit => "Function Exit",
                FunctionAction::TailExit => "Function Tail Exit",
            };
            write!(out, "<{what}: #{func_id} delta = +{delta}>")
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    Preamble,
    Metadata,
    Function,
    Arg,
    Event,
    End,
}

/// Dumps the records. `verify` groups them per buffer like
/// `llvm-xray fdr-dump -verify` (threads in llvm-xray's order, each
/// thread's buffers in file order). Returns the warnings; on a decoding
/// error everything before it has been written.
pub fn write_fdr_dump<W: Write + ?Sized>(
    trace: &Trace<'_>,
    verify: bool,
    out: &mut W,
) -> Result<Warnings> {
    if !trace.is_fdr_log() {
        let what = if trace.yaml.is_some() {
            "a YAML trace"
        } else {
            "a basic-mode log"
        };
        return Err(Error::Other(format!(
            "fdr-dump reads binary FDR logs; this is {what} (try `tracekit xray convert`)"
        )));
    }
    let mut warnings = trace.warnings.clone();
    if !verify {
        let mut reader = FdrReader::new(trace.data, trace.header);
        // Memory stays bounded: what was dumped is released in stretches.
        const STRETCH: usize = 8 << 20;
        let mut released_to = 0usize;
        let res: Result<()> = (|| {
            for item in reader.by_ref() {
                let r = item?;
                write_record(out, &r.record).map_err(io)?;
                out.write_all(b"\n").map_err(io)?;
                if r.offset >= released_to + STRETCH {
                    trace.release_range(released_to, r.offset - released_to);
                    released_to = r.offset;
                }
            }
            Ok(())
        })();
        warnings.extend(reader.warnings);
        res?;
        return Ok(warnings);
    }
    for t in &trace.threads {
        let mut blocks = t.blocks.clone();
        blocks.sort_unstable();
        for bi in blocks {
            let b = &trace.blocks[bi];
            let mut reader = FdrReader::block(trace.data, trace.header, b.start, b.end);
            let (start, end) = (b.start, b.end);
            let mut state = State::Start;
            let res: Result<()> = (|| {
                for item in reader.by_ref() {
                    let r = item?;
                    let prefix: &[u8] = match r.record {
                        FdrRecord::BufferExtents { .. } => continue,
                        FdrRecord::NewBuffer { .. } => {
                            if state == State::Start {
                                out.write_all(b"\n[New Block]\n").map_err(io)?;
                            }
                            state = State::Preamble;
                            b"Preamble: \n"
                        }
                        FdrRecord::WallClock { .. } | FdrRecord::Pid { .. } => {
                            state = State::Preamble;
                            b""
                        }
                        FdrRecord::NewCpuId { .. } => {
                            let p: &[u8] = match state {
                                State::Preamble => b"\nBody:\n ",
                                State::Function => b"\nMetadata:  ",
                                _ => b" ",
                            };
                            state = State::Metadata;
                            p
                        }
                        FdrRecord::TscWrap { .. } => {
                            let p: &[u8] = if state == State::Function {
                                b"\nMetadata: "
                            } else {
                                b" "
                            };
                            state = State::Metadata;
                            p
                        }
                        FdrRecord::CustomEvent { .. }
                        | FdrRecord::CustomEventV5 { .. }
                        | FdrRecord::TypedEvent { .. } => {
                            let p: &[u8] = if state == State::Metadata {
                                b"\n*  "
                            } else {
                                b"*  "
                            };
                            state = State::Event;
                            p
                        }
                        FdrRecord::Function { .. } => {
                            let p: &[u8] = if state == State::Metadata {
                                b"\n-  "
                            } else {
                                b"-  "
                            };
                            state = State::Function;
                            p
                        }
                        FdrRecord::CallArgument { .. } => {
                            state = State::Arg;
                            b" : "
                        }
                        FdrRecord::EndOfBuffer => {
                            state = State::End;
                            b" *** "
                        }
                    };
                    out.write_all(prefix).map_err(io)?;
                    write_record(out, &r.record).map_err(io)?;
                    out.write_all(b"\n").map_err(io)?;
                }
                Ok(())
            })();
            warnings.extend(std::mem::take(&mut reader.warnings));
            res?;
            trace.release_range(start, end - start);
        }
    }
    Ok(warnings)
}
