//! `convert`: an input to another format. The targets of every input
//! (`TARGETS`: chrome, perfetto, parquet, otlp) are written from the
//! timeline model or the SQL tables; each dialect adds its own targets
//! (`Dialect::targets`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use tracekit_export::chrome_sink::ChromeSink;
use tracekit_export::perfetto::PerfettoSink;
use tracekit_otlp::exporter::Exporter;
use tracekit_otlp::sink::{FileOutput, OtlpSink, SinkOptions};

use crate::input::Input;
use crate::options::ConvertOptions;
use crate::otlp::export_line;
use crate::out::{output, usage};
use crate::registry::{self, Dialect, Target, Writer};

/// The targets every dialect converts to; each dialect adds its own
/// ([`Dialect::targets`]). Dispatch, `--help`, the values `--to` accepts
/// and the error for a target an input cannot take all come from these
/// tables.
pub static TARGETS: &[Target] = &[
    Target {
        names: &["chrome", "chrome-json"],
        about: "Chrome Trace Event JSON (Perfetto UI, chrome://tracing)",
        write: Writer::Any(to_chrome),
    },
    Target {
        names: &["perfetto", "pftrace"],
        about: "Perfetto's native protobuf trace (.pftrace): ui.perfetto.dev and\n\
                trace_processor; packets in zlib-compressed bundles, as Perfetto's own\n\
                service writes them: 1/6 to 1/30 of Chrome JSON's size, as a stream",
        write: Writer::Any(to_perfetto),
    },
    Target {
        names: &["parquet"],
        about: "Apache Parquet tables for Spark, DuckDB, DataFusion, Trino (docs/sql.md):\n\
                -o names a directory; several inputs (FILE|DIR...) go into one set of tables",
        write: Writer::Inputs(parquet),
    },
    Target {
        names: &["otlp"],
        about: "OpenTelemetry traces: one ExportTraceServiceRequest (protobuf) to -o, or sent\n\
                to --otlp-endpoint over OTLP/HTTP (batched, gzip, retried, spooled when the\n\
                collector is away); a span per track and per slice, instants as span events,\n\
                flows as links; one trace per input (Git Trace2: per session, ids from the\n\
                SIDs). A clock without wall time (XRay) is placed at the file's mtime, said\n\
                in a warning and in the resource attribute tracekit.time.anchor",
        write: Writer::Any(to_otlp),
    },
];

/// Where a trace without wall-clock time is placed: the file's mtime (or
/// now, for standard input), and what that is.
fn fallback_anchor(input: &Input) -> (i64, String) {
    let mtime = (!input.is_stdin())
        .then(|| {
            std::fs::metadata(&input.path)
                .and_then(|m| m.modified())
                .ok()
        })
        .flatten();
    let (t, what) = match mtime {
        Some(t) => (t, "the file's modification time"),
        None => (std::time::SystemTime::now(), "the time of the conversion"),
    };
    let ns = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    (ns, what.to_string())
}

fn to_chrome(
    input: &Input,
    dialect: &'static dyn Dialect,
    args: &ConvertOptions,
) -> Result<ExitCode> {
    let mut sink = ChromeSink::new(output(args.output.as_deref())?)?;
    let code = dialect.timeline(input, args, &mut sink)?;
    sink.into_inner()?.flush()?;
    Ok(code)
}

fn to_perfetto(
    input: &Input,
    dialect: &'static dyn Dialect,
    args: &ConvertOptions,
) -> Result<ExitCode> {
    let mut sink = PerfettoSink::new(output(args.output.as_deref())?);
    let code = dialect.timeline(input, args, &mut sink)?;
    sink.into_inner()?.flush()?;
    Ok(code)
}

fn to_otlp(
    input: &Input,
    dialect: &'static dyn Dialect,
    args: &ConvertOptions,
) -> Result<ExitCode> {
    let anchor = fallback_anchor(input);
    let anchor_what = anchor.1.clone();
    let opts = SinkOptions {
        redactor: args.otlp.redactor.clone(),
        fallback_anchor: Some(anchor),
        ..SinkOptions::default()
    };
    let warn_anchor = |used: bool| {
        if used {
            eprintln!(
                "tracekit: {}: warning: the trace's clock has no wall-clock anchor: OTLP times \
                 are placed from {anchor_what} (resource attribute tracekit.time.anchor)",
                input.display()
            );
        }
    };
    match args.otlp.exporter.clone() {
        Some(config) => {
            if args.output.is_some() {
                return usage("--to otlp writes to -o or sends to --otlp-endpoint, not both");
            }
            let exporter = Exporter::start(config)?;
            let mut sink = OtlpSink::new(&exporter, opts);
            let code = dialect.timeline(input, args, &mut sink)?;
            warn_anchor(sink.stats().anchored_by_fallback);
            drop(sink);
            let stats = exporter.finish(std::time::Duration::from_secs(30));
            eprintln!(
                "tracekit: {}: OTLP: {}",
                input.display(),
                export_line(&stats)
            );
            for e in stats.errors.iter().rev().take(3) {
                eprintln!("tracekit: {}: OTLP error: {e}", input.display());
            }
            Ok(if stats.sessions_dropped + stats.sessions_rejected > 0 {
                ExitCode::from(1)
            } else {
                code
            })
        }
        None => {
            let mut sink = OtlpSink::new(FileOutput(output(args.output.as_deref())?), opts);
            let code = dialect.timeline(input, args, &mut sink)?;
            warn_anchor(sink.stats().anchored_by_fallback);
            sink.into_inner().0.flush()?;
            Ok(code)
        }
    }
}

/// `tracekit convert`: the input to the target `args.to` names.
pub fn run(args: &ConvertOptions) -> Result<ExitCode> {
    let common = TARGETS.iter().find(|t| t.answers_to(&args.to));
    if let Some(Target {
        write: Writer::Inputs(write),
        ..
    }) = common
    {
        return write(args);
    }
    if !args.more_inputs.is_empty() {
        return usage(format!(
            "convert takes one input, except with --to parquet (not --to {})",
            args.to
        ));
    }
    let input = Input::open(&args.input)?;
    let dialect = registry::detect(&input)?;
    let own = || dialect.targets().iter().find(|t| t.answers_to(&args.to));
    match common.or_else(own).map(|t| t.write) {
        Some(Writer::Any(write)) => write(&input, dialect, args),
        Some(Writer::Own(write)) => write(&input, args),
        Some(Writer::Inputs(write)) => write(args),
        None => {
            let names: Vec<&str> = TARGETS
                .iter()
                .chain(dialect.targets())
                .map(Target::name)
                .collect();
            usage(format!(
                "{}: {} converts to {} (not {:?})",
                input.display(),
                dialect.name(),
                names.join(", "),
                args.to
            ))
        }
    }
}

/// `--to parquet -o DIR`: every input's tables into `DIR/<table>/NAME.parquet`.
/// Two threads, each with a writer thread of its own: one runs the
/// timeline mappings (the generic tables) and the dialects that write all
/// their tables from that one pass (XRay); the other the other dialects'
/// own passes (their tables). Each input is opened and detected once.
fn parquet(args: &ConvertOptions) -> Result<ExitCode> {
    use tracekit_parquet::{BatchSink, ParquetDir, RecordBatch, Table};
    let Some(dir) = args.output.clone().filter(|o| o.as_os_str() != "-") else {
        return usage("--to parquet writes a directory of tables: name it with -o DIR");
    };
    let mut paths = vec![args.input.clone()];
    paths.extend(args.more_inputs.iter().cloned());
    // Every input's format is known before anything is written.
    let inputs = crate::tables::expand_inputs(&paths)?;
    let name = parquet_file_name(&inputs.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>());

    /// The tables of one input that one thread writes.
    struct Only<'a> {
        out: &'a mut ParquetDir,
        keep: fn(Table) -> bool,
    }
    impl BatchSink for Only<'_> {
        fn wants(&self, table: Table) -> bool {
            (self.keep)(table)
        }
        fn batch(&mut self, table: Table, batch: RecordBatch) -> std::io::Result<()> {
            self.out.batch(table, batch)
        }
    }
    /// Each table written: which, where, how many rows.
    type Written = Vec<(Table, PathBuf, u64)>;
    let run = |generic: bool| -> Result<(ExitCode, Written)> {
        let mut out = ParquetDir::new(&dir, &name);
        let mut code = ExitCode::SUCCESS;
        for (path, dialect) in &inputs {
            let one_pass = dialect.tables_in_one_pass(path);
            let keep: fn(Table) -> bool = match (generic, one_pass) {
                (true, true) => |_| true,
                (true, false) => Table::is_generic,
                (false, true) => continue,
                (false, false) => |t: Table| !t.is_generic(),
            };
            let mut sink = Only {
                out: &mut out,
                keep,
            };
            let c = crate::tables::produce_from(
                path,
                *dialect,
                args,
                &mut sink,
                tracekit_parquet::DEFAULT_BATCH_ROWS,
            )?;
            if c != ExitCode::SUCCESS {
                code = c;
            }
        }
        out.finish()?;
        Ok((code, std::mem::take(&mut out.written)))
    };
    let (a, b) = std::thread::scope(|s| {
        let dialect_tables = s.spawn(|| run(false));
        let generic = run(true);
        let dialect = dialect_tables
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the dialect tables' thread panicked")));
        (generic, dialect)
    });
    if a.is_err() || b.is_err() {
        // No half-written tables: a file without its footer makes every
        // engine fail on the whole directory.
        let names = ParquetDir::new(&dir, &name);
        for t in Table::ALL {
            let _ = std::fs::remove_file(names.path_of(t));
        }
    }
    let (ca, mut wa) = a?;
    let (cb, wb) = b?;
    wa.extend(wb);
    wa.sort();
    let mut out = output(None)?;
    for (t, path, rows) in &wa {
        writeln!(
            out,
            "{:<20} {:>12} rows  {}",
            t.name(),
            rows,
            path.display()
        )?;
    }
    out.flush()?;
    Ok(if ca != ExitCode::SUCCESS { ca } else { cb })
}

/// The file name used in every table directory: the first input's name and
/// the time of the run, so runs and machines merge without collisions.
fn parquet_file_name(inputs: &[PathBuf]) -> String {
    let first = inputs
        .first()
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "trace".into());
    let clean: String = first
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{clean}-{now:x}-{}", std::process::id())
}
