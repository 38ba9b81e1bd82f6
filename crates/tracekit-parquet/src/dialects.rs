//! The dialect tables: what the generic tables lose and users query.
//! Each function reads one dialect's own row API and appends rows.

use std::io;

use arrow_array::types::{Int32Type, Int64Type, UInt64Type};
use tracekit_core::timeline::NsScale;
use tracekit_core::timeline::{Event, Sink, TraceInfo};
use tracekit_core::Warnings;
use tracekit_kwinject::analysis::Build;
use tracekit_kwinject::cdb::{entries_for, CdbOptions};
use tracekit_kwinject::env::{EnvBase, EnvFolder};
use tracekit_kwinject::trace::Exit;
use tracekit_trace2::report::ProcessRow;
use tracekit_xray::calls::Call;
use tracekit_xray::names::FunctionNames;
use tracekit_xray::timeline::{map_trace_calls, write_args_json, CallSink};
use tracekit_xray::trace::Trace;

use arrow_array::ArrayRef;

use crate::rows::{Flags, Prim, Text, TypedBatch, TypedColumns};
use crate::rows::{Source, Tables};
use crate::schema::Table;
use crate::timeline::{json_string, RowStats, TimelineRows};

fn json_array<S: AsRef<[u8]>>(items: &[S]) -> Vec<u8> {
    let mut out = vec![b'['];
    for (i, a) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        json_string(&mut out, a.as_ref());
    }
    out.push(b']');
    out
}

fn io_err(e: io::Error) -> tracekit_core::Error {
    tracekit_core::Error::io(None, e)
}

fn xray_source(source: &str) -> Source {
    Source {
        file: source.to_string(),
        host: None,
        dialect: "xray",
    }
}

/// Writes `xray_calls` rows: one per finished call.
struct CallRows {
    clock: NsScale,
    /// The trace's earliest TSC (the timeline's tick 0).
    base: u64,
    args: Vec<u8>,
    batch: TypedBatch<CallColumns>,
}

/// The `xray_calls` table's columns, one typed builder each (a row per
/// call: the table XRay fills most).
struct CallColumns {
    pid: Prim<i64>,
    tid: Prim<i64>,
    function_id: Prim<i32>,
    function: Text,
    start_ns: Prim<i64>,
    dur_ns: Prim<i64>,
    start_tsc: Prim<u64>,
    dur_tsc: Prim<u64>,
    depth: Prim<i32>,
    closed_by_parent: Flags,
    args: Text,
}

impl TypedColumns for CallColumns {
    const TABLE: Table = Table::XrayCalls;

    fn with_capacity(rows: usize) -> Self {
        let t = Self::TABLE;
        CallColumns {
            pid: Prim::of(t, "pid", rows),
            tid: Prim::of(t, "tid", rows),
            function_id: Prim::of(t, "function_id", rows),
            function: Text::of(t, "function", rows),
            start_ns: Prim::of(t, "start_ns", rows),
            dur_ns: Prim::of(t, "dur_ns", rows),
            start_tsc: Prim::of(t, "start_tsc", rows),
            dur_tsc: Prim::of(t, "dur_tsc", rows),
            depth: Prim::of(t, "depth", rows),
            closed_by_parent: Flags::with_capacity(rows),
            args: Text::of(t, "args", rows),
        }
    }

    fn arrays(&mut self) -> Vec<(&'static str, ArrayRef)> {
        vec![
            ("pid", self.pid.array::<Int64Type>()),
            ("tid", self.tid.array::<Int64Type>()),
            ("function_id", self.function_id.array::<Int32Type>()),
            ("function", self.function.array()),
            ("start_ns", self.start_ns.array::<Int64Type>()),
            ("dur_ns", self.dur_ns.array::<Int64Type>()),
            ("start_tsc", self.start_tsc.array::<UInt64Type>()),
            ("dur_tsc", self.dur_tsc.array::<UInt64Type>()),
            ("depth", self.depth.array::<Int32Type>()),
            ("closed_by_parent", self.closed_by_parent.array()),
            ("args", self.args.array()),
        ]
    }
}

impl CallRows {
    /// `None` when `tables` does not want `xray_calls`.
    fn new(trace: &Trace<'_>, tables: &Tables<'_>) -> Option<CallRows> {
        Some(CallRows {
            clock: tracekit_xray::timeline::clock(trace).scale(),
            base: tracekit_xray::commands::earliest_tsc(trace),
            args: Vec::new(),
            batch: TypedBatch::wanted(tables)?,
        })
    }

    fn push(&mut self, tables: &mut Tables<'_>, c: &Call<'_>, function: &str) -> io::Result<()> {
        let entry = c.entry_tsc.wrapping_sub(self.base) as i64;
        let start = self.clock.to_ns(entry);
        let end = self.clock.to_ns(entry.wrapping_add(c.duration_tsc as i64));
        let args = &mut self.args;
        self.batch.push(tables, |cols| {
            cols.pid.push(c.pid.into());
            cols.tid.push(c.tid.into());
            cols.function_id.push(c.function_id);
            cols.function.push_str(function);
            cols.start_ns.push(start);
            cols.dur_ns.push(end - start);
            cols.start_tsc.push(c.entry_tsc);
            cols.dur_tsc.push(c.duration_tsc);
            cols.depth.push(c.depth as i32);
            cols.closed_by_parent.push(c.closed_by_parent);
            if c.args.is_empty() {
                cols.args.push_null();
            } else {
                args.clear();
                write_args_json(args, c.args);
                cols.args.push(args);
            }
        })
    }

    /// Hands the open batch to `tables`.
    fn flush(&mut self, tables: &mut Tables<'_>) -> io::Result<()> {
        self.batch.flush(tables)
    }
}

/// `xray_calls` alone: every call of `trace` with both its records.
pub fn xray_calls(
    trace: &Trace<'_>,
    names: &FunctionNames,
    source: &str,
    tables: &mut Tables<'_>,
) -> tracekit_core::Result<Warnings> {
    tables.set_source(xray_source(source)).map_err(io_err)?;
    let Some(mut rows) = CallRows::new(trace, tables) else {
        return Ok(Default::default());
    };
    let (_, warnings) = tracekit_xray::calls::for_each_call(trace, |c| {
        rows.push(tables, c, &names.symbol_or_number(c.function_id))
            .map_err(io_err)
    })?;
    rows.flush(tables).map_err(io_err)?;
    tables.flush().map_err(io_err)?;
    Ok(warnings)
}

/// The timeline's rows and `xray_calls`, from one pass over the trace.
struct XrayRows<'r, 't, 'o> {
    timeline: &'r mut TimelineRows<'t, 'o>,
    calls: Option<CallRows>,
}

impl Sink for XrayRows<'_, '_, '_> {
    fn start(&mut self, info: &TraceInfo<'_>) -> io::Result<()> {
        self.timeline.start(info)
    }
    fn event(&mut self, event: &Event<'_>) -> io::Result<()> {
        self.timeline.event(event)
    }
    fn finish(&mut self) -> io::Result<()> {
        if let Some(rows) = &mut self.calls {
            rows.flush(self.timeline.tables())?;
        }
        self.timeline.finish()
    }
}

impl CallSink for XrayRows<'_, '_, '_> {
    fn wants_calls(&self) -> bool {
        self.calls.is_some()
    }
    fn call(&mut self, call: &Call<'_>, function: &str) -> io::Result<()> {
        match &mut self.calls {
            Some(rows) => rows.push(self.timeline.tables(), call, function),
            None => Ok(()),
        }
    }
}

/// Every XRay table `tables` wants: the timeline's (slices, threads, ...)
/// and `xray_calls`, decoded and paired once. Returns the trace's
/// warnings and what the timeline rows could not hold.
pub fn xray(
    trace: &Trace<'_>,
    names: &FunctionNames,
    source: &str,
    tables: &mut Tables<'_>,
) -> tracekit_core::Result<(Warnings, RowStats)> {
    if !Table::ALL
        .iter()
        .any(|&t| t.is_generic() && tables.wants(t))
    {
        let w = xray_calls(trace, names, source, tables)?;
        return Ok((w, RowStats::default()));
    }
    let calls = CallRows::new(trace, tables);
    let mut timeline = TimelineRows::new(tables);
    let warnings = map_trace_calls(
        trace,
        names,
        source,
        &mut XrayRows {
            timeline: &mut timeline,
            calls,
        },
    )?;
    Ok((warnings, timeline.stats))
}

/// `trace2_processes`: one row (from the report's process hook).
pub fn trace2_process(tables: &mut Tables<'_>, p: &ProcessRow<'_>) -> io::Result<()> {
    if tables.source().file != p.source || tables.source().dialect != "trace2" {
        tables.set_source(Source {
            file: p.source.to_string(),
            host: None,
            dialect: "trace2",
        })?;
    }
    let argv = json_array(p.argv);
    tables.push(Table::Trace2Processes, |r| {
        r.bytes(p.session)
            .bytes(p.sid)
            .opt_bytes(p.parent_sid)
            .opt_i64(p.pid.map(i64::from))
            .bytes(p.command)
            .opt_bytes(p.mode)
            .bytes(&argv)
            .opt_bytes(p.version)
            .time(p.start_unix_us.map(|us| us.saturating_mul(1000)))
            .opt_i64(p.elapsed_us.map(|us| us.saturating_mul(1000)))
            .opt_i64(p.exit_code)
            .opt_i64(p.signal)
            .str(if p.elapsed_us.is_none() && p.end == "none" {
                "unfinished"
            } else {
                p.end
            })
            .i64(i64::from(p.fork));
    })
}

/// `build_processes`: every process of the build.
pub fn build_processes(b: &Build<'_>, source: &str, tables: &mut Tables<'_>) -> io::Result<()> {
    tables.set_source(Source {
        file: source.to_string(),
        host: None,
        dialect: "kwinject",
    })?;
    if !tables.wants(Table::BuildProcesses) {
        return Ok(());
    }
    let t = b.trace;
    let base = b.span().map(|(s, _)| s);
    // The compile entries again (Build keeps the first source only), with
    // the options Build::new uses.
    let mut folder = EnvFolder::new(t.env.clone(), EnvBase::Parent);
    let mut w = Warnings::default();
    let opts = CdbOptions {
        existing_only: false,
        ..Default::default()
    };
    for (i, p) in t.processes.iter().enumerate() {
        let env = folder.fold(p, &mut w);
        let entries = entries_for(p, &env, &opts).unwrap_or_default();
        let sources: Vec<&str> = entries.iter().map(|e| e.file.as_str()).collect();
        let outputs: Vec<&str> = entries.iter().filter_map(|e| e.output.as_deref()).collect();
        let start_ns = match (p.start_us, base) {
            (Some(s), Some(b)) => Some((s as i64 - b as i64).saturating_mul(1000)),
            _ => None,
        };
        let (code, signal) = match p.exit {
            Some(Exit::Code(c)) => (Some(i64::from(c)), None),
            Some(Exit::Signal(s)) => (None, Some(i64::from(s))),
            None => (None, None),
        };
        tables.push(Table::BuildProcesses, |r| {
            r.i64(i as i64)
                .i64(p.id)
                .opt_i64(p.parent())
                .opt_i64(b.parent[i].map(|x| x as i64))
                .str(&p.executable)
                .bytes(&json_array(&p.args))
                .str(&p.work_dir)
                .opt_i64(start_ns)
                .time(p.start_us.map(|s| (s as i64).saturating_mul(1000)))
                .opt_i64(p.duration_us().map(|d| (d as i64).saturating_mul(1000)))
                .opt_i64(code)
                .opt_i64(signal)
                .bool(b.compile_file[i].is_some())
                .opt_str(b.compile_file[i].as_deref())
                .opt_bytes(
                    (!sources.is_empty())
                        .then(|| json_array(&sources))
                        .as_deref(),
                )
                .opt_bytes(
                    (!outputs.is_empty())
                        .then(|| json_array(&outputs))
                        .as_deref(),
                );
        })?;
    }
    tables.flush()
}

/// `rtrace_allocations` and `rtrace_backtraces` of the trace read from
/// `input`.
pub fn rtrace<R: tracekit_rtrace::IntoItems>(
    input: R,
    source: &str,
    tables: &mut Tables<'_>,
) -> tracekit_core::Result<(tracekit_rtrace::allocations::AllocationStats, Warnings)> {
    let io_err = |e| tracekit_core::Error::io(None, e);
    tables
        .set_source(Source {
            file: source.to_string(),
            host: None,
            dialect: "rtrace",
        })
        .map_err(io_err)?;
    let tables = std::cell::RefCell::new(tables);
    let res = tracekit_rtrace::allocations::for_each_allocation(
        input,
        |id, frames| {
            let mut t = tables.borrow_mut();
            for (k, f) in frames.iter().enumerate() {
                t.push(Table::RtraceBacktraces, |r| {
                    r.u64(id)
                        .i32(k as i32)
                        .u64(f.addr)
                        .opt_str(f.text.as_deref());
                })
                .map_err(io_err)?;
            }
            Ok(())
        },
        |a| {
            let mut t = tables.borrow_mut();
            t.push(Table::RtraceAllocations, |r| {
                r.opt_i64(a.pid)
                    .str(&a.resource)
                    .i64(a.call_index)
                    .str(&a.function)
                    .i64(a.size)
                    .opt_u64(a.address)
                    .opt_i64(a.time_ms.map(|ms| (ms as i64).saturating_mul(1_000_000)))
                    .u64(a.backtrace_id)
                    .bool(a.new_block)
                    .opt_i64(a.freed_index)
                    .bool(a.leaked);
            })
            .map_err(io_err)
        },
    )?;
    tables.into_inner().flush().map_err(io_err)?;
    Ok(res)
}

/// A [`ProcessRow`] that owns its data, to cross threads (the report runs
/// on one, the tables are written on another).
#[derive(Debug, Clone)]
pub struct OwnedProcessRow {
    source: String,
    session: Box<[u8]>,
    sid: Box<[u8]>,
    fork: u32,
    parent_sid: Option<Box<[u8]>>,
    pid: Option<u32>,
    command: Box<[u8]>,
    mode: Option<Box<[u8]>>,
    argv: Vec<Box<[u8]>>,
    version: Option<Box<[u8]>>,
    start_unix_us: Option<i64>,
    elapsed_us: Option<i64>,
    exit_code: Option<i64>,
    signal: Option<i64>,
    end: &'static str,
}

impl From<&ProcessRow<'_>> for OwnedProcessRow {
    fn from(p: &ProcessRow<'_>) -> Self {
        OwnedProcessRow {
            source: p.source.to_string(),
            session: p.session.into(),
            sid: p.sid.into(),
            fork: p.fork,
            parent_sid: p.parent_sid.map(Into::into),
            pid: p.pid,
            command: p.command.into(),
            mode: p.mode.map(Into::into),
            argv: p.argv.to_vec(),
            version: p.version.map(Into::into),
            start_unix_us: p.start_unix_us,
            elapsed_us: p.elapsed_us,
            exit_code: p.exit_code,
            signal: p.signal,
            end: p.end,
        }
    }
}

impl OwnedProcessRow {
    pub fn row(&self) -> ProcessRow<'_> {
        ProcessRow {
            source: &self.source,
            session: &self.session,
            sid: &self.sid,
            fork: self.fork,
            parent_sid: self.parent_sid.as_deref(),
            pid: self.pid,
            command: &self.command,
            mode: self.mode.as_deref(),
            argv: &self.argv,
            version: self.version.as_deref(),
            start_unix_us: self.start_unix_us,
            elapsed_us: self.elapsed_us,
            exit_code: self.exit_code,
            signal: self.signal,
            end: self.end,
        }
    }
}
