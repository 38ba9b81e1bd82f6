//! The llvm-xray subcommands over an opened trace, shared by the CLI and
//! the golden tests. Each returns the warnings of the run; on a decoding
//! error, what was written before it stays written.

use std::io::Write;

use tracekit_core::{Error, Position, Result, Warnings};

use crate::account::{self, AccountOptions, Accountant, SortField};
use crate::names::FunctionNames;
use crate::stack::{Aggregation, StackTrie};
use crate::trace::Trace;
use crate::yaml::YamlWriter;

fn io(e: std::io::Error) -> Error {
    Error::io(None, e)
}

/// `account` options (llvm-xray's flags).
#[derive(Debug, Clone)]
pub struct AccountArgs {
    pub keep_going: bool,
    pub deduce_sibling_calls: bool,
    pub recursive_calls_only: bool,
    pub sort: SortField,
    pub descending: bool,
    pub top: usize,
    pub csv: bool,
}

impl Default for AccountArgs {
    fn default() -> Self {
        AccountArgs {
            keep_going: false,
            deduce_sibling_calls: false,
            recursive_calls_only: false,
            sort: SortField::FuncId,
            descending: false,
            top: 0,
            csv: false,
        }
    }
}

/// The sorted rows, how many functions there were before `-top`, and the
/// warnings. A record that cannot be processed is llvm-xray's report
/// of it, functions named by `names`.
pub fn account_rows(
    trace: &Trace<'_>,
    names: &FunctionNames,
    args: &AccountArgs,
) -> Result<(Vec<account::Row>, usize, Warnings)> {
    let mut warnings = trace.warnings.clone();
    let (mut rows, w) =
        if trace.is_fdr_log() && !args.deduce_sibling_calls && !args.recursive_calls_only {
            let workers = crate::trace::worker_count();
            account::account_fdr_parallel(trace, args.keep_going, workers, workers, names)?
        } else {
            let mut acc = Accountant::new(AccountOptions {
                keep_going: args.keep_going,
                deduce_sibling_calls: args.deduce_sibling_calls,
                recursive_calls_only: args.recursive_calls_only,
            })
            .with_names(names)
            .orphan_exits_are_errors(trace.yaml.is_some());
            warnings.extend(trace.try_for_each(|r| acc.add(r))?);
            acc.rows(trace.header.cycle_frequency)
        };
    warnings.extend(w);
    let total = rows.len();
    account::sort_rows(&mut rows, args.sort, args.descending, args.top);
    Ok((rows, total, warnings))
}

pub fn account<W: Write + ?Sized>(
    trace: &Trace<'_>,
    names: &FunctionNames,
    args: &AccountArgs,
    out: &mut W,
) -> Result<Warnings> {
    let (rows, total, warnings) = account_rows(trace, names, args)?;
    if args.csv {
        account::write_csv(out, &rows, names).map_err(io)?;
    } else {
        account::write_text(out, total, &rows, names).map_err(io)?;
    }
    Ok(warnings)
}

/// `stack` options.
#[derive(Debug, Clone, Default)]
pub struct StackArgs {
    pub keep_going: bool,
    pub per_thread: bool,
    pub aggregate_threads: bool,
    pub all_stacks: bool,
    pub flame: bool,
    pub count: bool,
}

pub fn stack<W: Write + ?Sized>(
    traces: &[Trace<'_>],
    names: &FunctionNames,
    args: &StackArgs,
    out: &mut W,
) -> Result<Warnings> {
    if args.per_thread && args.aggregate_threads {
        return Err(Error::Other(
            "-per-thread-stacks and -aggregate-threads exclude each other".into(),
        ));
    }
    if !args.all_stacks && args.flame {
        return Err(Error::Other(
            "-stack-format=flame needs -all-stacks (the human format shows the top stacks only)"
                .into(),
        ));
    }
    if args.all_stacks && !args.flame {
        return Err(Error::Other(
            "-all-stacks needs -stack-format=flame (the human format shows the top stacks only)"
                .into(),
        ));
    }
    let mut trie = StackTrie::new(args.keep_going);
    let mut warnings = Warnings::default();
    // llvm-xray's report of a record without its entry.
    let found = |(func_id, tid, record_type): (i32, u32, u16)| {
        let kind = match record_type {
            0 => "Fn Entry",
            1 => "Fn Exit",
            _ => "Unknown",
        };
        format!(
            "Found record {{FuncId: \"{}\", ThreadId: \"{tid}\", RecordType: \"{kind}\"}} with no matching function entry",
            names.symbol_or_number(func_id)
        )
    };
    for trace in traces {
        warnings.extend(trace.warnings.clone());
        if trace.is_fdr_log() {
            trie.orphan_exits_are_errors = false;
            let workers = crate::trace::worker_count();
            warnings.extend(trie.add_fdr_parallel(trace, workers, workers)?);
        } else {
            trie.orphan_exits_are_errors = trace.yaml.is_some();
            let res = trace.try_for_each(|r| trie.add(r));
            for u in trie.unmatched_records.drain(..) {
                warnings.push(Position::Unknown, found(u));
            }
            match res {
                Ok(w) => warnings.extend(w),
                Err(e) => {
                    return Err(match trie.last_unmatched.take() {
                        Some(u) if trie.orphan_exits_are_errors => Error::Other(found(u)),
                        _ => e,
                    })
                }
            }
        }
    }
    warnings.extend(trie.finish_warnings());
    if trie.is_empty() {
        return Err(Error::Other(
            "No instrumented calls were accounted in the input file.".into(),
        ));
    }
    let agg = if args.count {
        Aggregation::Count
    } else {
        Aggregation::Time
    };
    if args.all_stacks {
        if args.aggregate_threads {
            let roots = trie.merge_across_threads();
            trie.write_flame(out, names, &roots, None, agg)
                .map_err(io)?;
        } else {
            for (tid, roots) in trie.threads() {
                trie.write_flame(out, names, &roots, Some(tid), agg)
                    .map_err(io)?;
            }
        }
        return Ok(warnings);
    }
    if args.aggregate_threads {
        let roots = trie.merge_across_threads();
        trie.write_report(out, names, &roots).map_err(io)?;
    } else if args.per_thread {
        for (tid, roots) in trie.threads() {
            writeln!(out, "Thread {tid}:").map_err(io)?;
            trie.write_report(out, names, &roots).map_err(io)?;
            writeln!(out).map_err(io)?;
        }
    } else {
        let roots = trie.all_roots();
        trie.write_report(out, names, &roots).map_err(io)?;
    }
    Ok(warnings)
}

/// `convert -output-format=yaml`. `symbolize`: function names instead of
/// ids; `sort`: by timestamp (llvm-xray's default).
pub fn convert_yaml<W: Write>(
    trace: &Trace<'_>,
    names: &FunctionNames,
    symbolize: bool,
    sort: bool,
    out: W,
) -> Result<Warnings> {
    let mut w = YamlWriter::new(out, &trace.header).map_err(io)?;
    let mut warnings = trace.warnings.clone();
    let mut write_all = |it: &mut dyn Iterator<Item = Result<crate::Record<'_>>>| -> Result<()> {
        let mut num = String::new();
        for r in it {
            let r = r?;
            if symbolize {
                w.record(&r, &names.symbol_or_number(r.func_id))
                    .map_err(io)?;
            } else {
                num.clear();
                use std::fmt::Write as _;
                let _ = write!(num, "{}", r.func_id);
                w.record(&r, &num).map_err(io)?;
            }
        }
        Ok(())
    };
    if sort {
        let mut s = trace.sorted_records();
        let res = write_all(&mut s);
        warnings.extend(s.warnings());
        res?;
    } else {
        let mut s = trace.records();
        let res = write_all(&mut s);
        warnings.extend(s.warnings());
        res?;
    }
    w.finish().map_err(io)?;
    Ok(warnings)
}

/// `graph` options.
#[derive(Debug, Clone)]
pub struct GraphArgs {
    pub keep_going: bool,
    pub deduce_sibling_calls: bool,
    pub edge_label: crate::graph::Stat,
    pub edge_color: crate::graph::Stat,
    pub vertex_label: crate::graph::Stat,
    pub vertex_color: crate::graph::Stat,
}

impl Default for GraphArgs {
    fn default() -> Self {
        use crate::graph::Stat;
        GraphArgs {
            keep_going: false,
            deduce_sibling_calls: false,
            edge_label: Stat::None,
            edge_color: Stat::None,
            vertex_label: Stat::None,
            vertex_color: Stat::None,
        }
    }
}

pub fn graph<W: Write + ?Sized>(
    trace: &Trace<'_>,
    names: &FunctionNames,
    args: &GraphArgs,
    out: &mut W,
) -> Result<Warnings> {
    let mut g = crate::graph::GraphBuilder::new(args.keep_going, args.deduce_sibling_calls);
    g.orphan_exits_are_errors = trace.yaml.is_some();
    let mut warnings = trace.warnings.clone();
    warnings.extend(trace.try_for_each(|r| g.add(r))?);
    warnings.extend(g.write_dot(
        out,
        names,
        trace.header.cycle_frequency,
        args.edge_label,
        args.edge_color,
        args.vertex_label,
        args.vertex_color,
    )?);
    Ok(warnings)
}

/// How `graph-diff` accounts one of its traces (llvm-xray's `-k`/`-k1`/
/// `-k2`, `-d`/`-d1`/`-d2`).
#[derive(Debug, Clone, Copy, Default)]
pub struct DiffSide {
    pub keep_going: bool,
    pub deduce_sibling_calls: bool,
}

/// The call graph of one trace for `graph-diff`: records in time order
/// (llvm-xray loads both traces sorted).
pub fn diff_graph(trace: &Trace<'_>, side: DiffSide) -> Result<crate::graph::GraphStats> {
    let mut g = crate::graph::GraphBuilder::new(side.keep_going, side.deduce_sibling_calls);
    g.orphan_exits_are_errors = trace.yaml.is_some();
    let mut warnings = trace.warnings.clone();
    let mut records = trace.sorted_records();
    for r in records.by_ref() {
        g.add(&r?)?;
    }
    warnings.extend(records.warnings());
    let mut stats = g.statistics(trace.header.cycle_frequency);
    warnings.extend(std::mem::take(&mut stats.warnings));
    stats.warnings = warnings;
    Ok(stats)
}

/// `graph-diff`: DOT of the difference of two traces' call graphs.
pub fn graph_diff<W: Write + ?Sized>(
    traces: [&Trace<'_>; 2],
    sides: [DiffSide; 2],
    style: &crate::graph::DiffStyle,
    out: &mut W,
) -> Result<[Warnings; 2]> {
    let a = diff_graph(traces[0], sides[0])?;
    let b = diff_graph(traces[1], sides[1])?;
    crate::graph::write_diff([&a, &b], style, out).map_err(io)?;
    Ok([a.warnings, b.warnings])
}

/// `convert -output-format=trace_event`.
pub fn convert_trace_event<W: Write>(
    trace: &Trace<'_>,
    names: &FunctionNames,
    symbolize: bool,
    sort: bool,
    out: W,
) -> Result<Warnings> {
    let mut w =
        crate::trace_event::TraceEventWriter::new(out, trace.header, symbolize.then_some(names))
            .map_err(io)?;
    let mut warnings = trace.warnings.clone();
    let mut run = |it: &mut dyn Iterator<Item = Result<crate::Record<'_>>>| -> Result<()> {
        for r in it {
            w.record(&r?).map_err(io)?;
        }
        Ok(())
    };
    if sort {
        let mut s = trace.sorted_records();
        let res = run(&mut s);
        warnings.extend(s.warnings());
        res?;
    } else {
        let mut s = trace.records();
        let res = run(&mut s);
        warnings.extend(s.warnings());
        res?;
    }
    w.finish().map_err(io)?;
    Ok(warnings)
}

/// Chrome Trace Event JSON of the trace's timeline
/// ([`crate::timeline::map_trace`]).
pub fn convert_chrome<W: Write>(
    trace: &Trace<'_>,
    names: &FunctionNames,
    out: W,
) -> Result<Warnings> {
    let mut sink = tracekit_export::chrome_sink::ChromeSink::new(out).map_err(io)?;
    let warnings = crate::timeline::map_trace(trace, names, "-", &mut sink)?;
    sink.into_inner().map_err(io)?;
    Ok(warnings)
}

/// The smallest timestamp of the trace, cheaply (block starts for FDR, a
/// scan of the fixed-size records for basic logs).
pub fn earliest_tsc(trace: &Trace<'_>) -> u64 {
    if trace.yaml.is_some() {
        let mut min = None::<u64>;
        for r in trace.records().flatten() {
            min = Some(min.map_or(r.tsc, |m| m.min(r.tsc)));
        }
        return min.unwrap_or(0);
    }
    match trace.header.kind {
        crate::LogKind::Fdr => trace
            .blocks
            .iter()
            .filter_map(|b| b.first_tsc)
            .min()
            .unwrap_or(0),
        crate::LogKind::Basic => {
            let e = trace.header.endian;
            let d = trace.data;
            let mut min = u64::MAX;
            let mut at = crate::header::HEADER_LEN;
            while at + crate::basic::RECORD_LEN <= d.len() {
                if e.u16(d, at) == 0 {
                    min = min.min(e.u64(d, at + 8));
                }
                at += crate::basic::RECORD_LEN;
            }
            if min == u64::MAX {
                0
            } else {
                min
            }
        }
    }
}

/// Runs [`crate::profile::Profile`] over the trace (load order).
pub fn profile(trace: &Trace<'_>) -> Result<(crate::profile::Profile, Warnings)> {
    let mut p = crate::profile::Profile::default();
    let mut warnings = trace.warnings.clone();
    warnings.extend(trace.try_for_each(|r| {
        p.add(r);
        Ok(())
    })?);
    warnings.extend(p.finish());
    Ok((p, warnings))
}

/// Folded stacks with **self** time per call path (ticks), the input a
/// flame graph needs. Threads are merged.
pub fn write_folded<W: Write + ?Sized>(
    p: &crate::profile::Profile,
    names: &FunctionNames,
    out: &mut W,
) -> Result<()> {
    for i in 0..p.nodes.len() {
        let n = &p.nodes[i];
        if n.self_time == 0 {
            continue;
        }
        let frames: Vec<std::rc::Rc<str>> = p
            .path(i)
            .into_iter()
            .map(|f| names.symbol_or_number(f))
            .collect();
        tracekit_export::flame::write_folded(out, &frames, n.self_time).map_err(io)?;
    }
    Ok(())
}

/// An output format of `convert` (llvm-xray's `-output-format` and ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvertFormat {
    /// llvm-xray's YAML.
    Yaml,
    /// llvm-xray's Chrome trace JSON.
    TraceEvent,
    /// Chrome Trace Event JSON through tracekit's writer (args, events).
    Chrome,
    /// A basic-mode (llvm-xray's `raw`) v3 log.
    Basic,
    /// An FDR v5 log.
    Fdr,
}

impl ConvertFormat {
    /// The names `-output-format` takes.
    pub const NAMES: &'static str = "yaml, trace_event, chrome, raw/basic, fdr";

    pub fn parse(s: &str) -> Option<ConvertFormat> {
        Some(match s {
            "yaml" => ConvertFormat::Yaml,
            "trace_event" => ConvertFormat::TraceEvent,
            "chrome" => ConvertFormat::Chrome,
            "raw" | "basic" => ConvertFormat::Basic,
            "fdr" => ConvertFormat::Fdr,
            _ => return None,
        })
    }
}

/// `convert` to `format`. `symbolize` and `sort` apply to yaml and
/// trace_event (llvm-xray's `-symbolize`, `-sort`).
pub fn convert<W: Write>(
    trace: &Trace<'_>,
    names: &FunctionNames,
    format: ConvertFormat,
    symbolize: bool,
    sort: bool,
    out: W,
) -> Result<Warnings> {
    match format {
        ConvertFormat::Yaml => convert_yaml(trace, names, symbolize, sort, out),
        ConvertFormat::TraceEvent => convert_trace_event(trace, names, symbolize, sort, out),
        ConvertFormat::Chrome => convert_chrome(trace, names, out),
        ConvertFormat::Basic => crate::writer::convert_to_basic(trace, out),
        ConvertFormat::Fdr => crate::writer::convert_to_fdr(trace, out),
    }
}
