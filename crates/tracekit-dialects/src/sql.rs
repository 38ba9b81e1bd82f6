//! `tracekit sql`: SQL over traces (scanned in place through each
//! dialect's `tables`) and Parquet directories, with the embedded
//! DataFusion of `tracekit-sql` (the `sql` feature).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;
use tracekit_parquet::BatchSink;
use tracekit_sql::{Engine, Format, TraceSource};

use crate::options::ConvertOptions;
use crate::out::output;
use crate::tables;

/// What `tracekit sql` runs.
#[derive(Debug, Clone)]
pub struct SqlOptions {
    /// The query (`None` only with `schema`).
    pub query: Option<String>,
    /// Traces (files or directories) and Parquet directories.
    pub inputs: Vec<PathBuf>,
    pub format: Format,
    /// List the tables and their columns instead.
    pub schema: bool,
    pub output: Option<PathBuf>,
    /// The instrumented binary, to name XRay function ids.
    pub instr_map: Option<PathBuf>,
    /// Memory the query may hold (bytes; `None`: the engine's default).
    pub memory_limit: Option<u64>,
}

/// `tracekit sql`: the query over the inputs, or the schema.
pub fn run(args: &SqlOptions) -> Result<ExitCode> {
    let format = args.format;
    let mut out = output(args.output.as_deref())?;
    if args.schema {
        if format == Format::Json {
            writeln!(out, "{}", tracekit_sql::schema_json())?;
        } else {
            tracekit_sql::write_schema(&mut out)?;
        }
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let Some(query) = args.query.as_deref() else {
        eprintln!("tracekit: sql needs a query (or --schema)");
        return Ok(ExitCode::from(2));
    };
    let mut options = tracekit_sql::Options::default();
    if let Some(limit) = args.memory_limit {
        options.memory_limit = limit;
    }
    // A panic inside the engine becomes the query's error (naming the
    // file at fault), not a crash report.
    tracekit_sql::quiet_engine_panics();
    let mut engine = Engine::with_options(options)?;
    let convert_args = convert_args(args.instr_map.clone());
    // Set when a trace had unreadable records (warned on stderr as they
    // are met): the answer is printed, and the exit code says it is partial.
    let unreadable = Arc::new(AtomicBool::new(false));
    for path in &args.inputs {
        if path.is_dir() && tracekit_sql::is_parquet_dir(path) {
            engine.add_parquet_dir(path);
            continue;
        }
        // An input of no known format fails here, naming it, whether or
        // not the query reads a table it would fill.
        for (p, dialect) in tables::expand_inputs(std::slice::from_ref(path))? {
            let a = convert_args.clone();
            let file = p.clone();
            let unreadable = unreadable.clone();
            engine.add_trace(TraceSource {
                name: p.display().to_string(),
                produce: Arc::new(move |sink: &mut dyn BatchSink| {
                    let code =
                        tables::produce_from(&file, dialect, &a, sink, tracekit_sql::BATCH_ROWS)
                            .map_err(|e| format!("{e:#}"))?;
                    if code != ExitCode::SUCCESS {
                        unreadable.store(true, Ordering::Relaxed);
                    }
                    Ok(())
                }),
            });
        }
    }
    match engine.print(query, format, &mut out) {
        Ok(()) if unreadable.load(Ordering::Relaxed) => Ok(ExitCode::from(1)),
        Ok(()) => Ok(ExitCode::SUCCESS),
        // A broken pipe (`| head`) is not an error.
        Err(e) if e.is_broken_pipe() => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("tracekit: sql: {e}");
            Ok(ExitCode::from(if e.is_usage() { 2 } else { 1 }))
        }
    }
}

/// The arguments the dialects' table producers read (`-m`).
pub fn convert_args(instr_map: Option<PathBuf>) -> ConvertOptions {
    ConvertOptions {
        input: PathBuf::from("-"),
        to: "parquet".into(),
        instr_map,
        ..ConvertOptions::default()
    }
}
