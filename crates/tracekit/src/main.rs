//! The `tracekit` command line: a thin layer over the library crates.
//!
//! Each dialect owns one module under `cmd/`; the generic verbs (`info`,
//! `report`, `convert`) detect the format from the content and hand over to
//! the dialect's module through `formats.rs`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;
mod generate;

use tracekit_dialects::progress;

/// Record, read, write, convert and analyse traces.
///
/// tracekit understands five trace dialects and detects them from their
/// content: Git Trace2 (EVENT, PERF, NORMAL), LLVM XRay (FDR and basic
/// logs), kwinject build traces, sp-rtrace text traces and POSIX trace
/// logs.
///
/// Examples:
///   tracekit info examples/trace2/clone.event.jsonl
///   tracekit report examples/trace2/clone.event.jsonl
///   tracekit convert examples/trace2/clone.event.jsonl --to trace2-perf
///   tracekit convert examples/trace2/clone.event.jsonl --to perfetto -o clone.pftrace
#[derive(Parser, Debug)]
#[command(
    name = "tracekit",
    version = env!("TRACEKIT_VERSION"),
    verbatim_doc_comment,
    max_term_width = 100
)]
struct Cli {
    /// Mode of the files tracekit creates with trace content (traces,
    /// conversions, reports, logs; the receiver's socket): private by
    /// default, since traces carry command lines, URLs and environments.
    /// Also TRACEKIT_FILE_MODE.
    #[arg(long, global = true, value_name = "OCTAL", default_value = "600",
          env = "TRACEKIT_FILE_MODE", value_parser = parse_file_mode)]
    file_mode: u32,
    /// Less on standard error: no progress bars (drawn only on a terminal,
    /// for big inputs), no summary lines (`trace2 listen`), no warnings
    /// (`rtrace postproc`, as sp-rtrace-postproc's -q).
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

fn parse_file_mode(s: &str) -> Result<u32, String> {
    tracekit_core::files::parse_mode(s)
        .ok_or_else(|| format!("{s:?} is not an octal file mode (e.g. 600, 640)"))
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Detect the format of traces and summarise them: format, version,
    /// producer, events by kind, time span, processes and threads.
    Info(cmd::info::Args),
    /// Analyse traces and print a human report (or --json).
    Report(cmd::report::Args),
    /// Compare two traces of one dialect (BEFORE AFTER): what got slower,
    /// what appeared or vanished, and whether a change is beyond the
    /// samples' spread (text, --json, --html).
    Diff(cmd::diff::Args),
    /// Convert a trace to another format (another dialect, Chrome Trace
    /// Event JSON, ...).
    Convert(cmd::convert::Args),
    /// SQL over traces and Parquet tables (embedded Apache DataFusion):
    /// `tracekit sql 'SELECT ...' FILE|DIR...`; `--schema` lists the tables.
    Sql(cmd::sql::Args),
    /// Git Trace2 tools: receive traces from git over a Unix socket.
    #[command(subcommand)]
    Trace2(cmd::trace2::Command),
    /// sp-rtrace tools: post-process (sp-rtrace-postproc options) and
    /// report memory/fd traces.
    #[command(subcommand)]
    Rtrace(cmd::rtrace::Command),
    /// LLVM XRay tools with llvm-xray's subcommands and flags: extract,
    /// account, stack, graph, graph-diff, convert, fdr-dump (`tracekit xray --help`).
    Xray(cmd::xray::RawArgs),
    /// Build traces (kwinject): `tracekit build spec` writes
    /// compile_commands.json or a Klocwork build specification.
    #[command(subcommand)]
    Build(cmd::build::Command),
    /// Run a program and record a trace of it (`tracekit record build --
    /// make -j8`).
    #[command(subcommand)]
    Record(cmd::record::Command),
    /// POSIX trace (<trace.h>): `tracekit posix record -- CMD` runs a
    /// traced program with tracekit as controller; `dump` prints a log.
    #[command(subcommand)]
    Posix(cmd::posix::Command),
    // Dialect subcommands: add yours above this line (one variant).
    /// Print a shell completion script (bash, zsh, fish, elvish,
    /// powershell): `tracekit completions bash`.
    Completions(generate::CompletionsArgs),
}

fn main() -> ExitCode {
    // `tracekit generate man|completions DIR`, for packages (`cargo xtask`):
    // outside the command tree, so no page or completion shows it.
    if std::env::args_os().nth(1).is_some_and(|a| a == "generate") {
        return generate::main();
    }
    let cli = Cli::parse();
    tracekit_core::files::set_mode(cli.file_mode);
    progress::set_quiet(cli.quiet);
    let result = match cli.command {
        Command::Info(args) => cmd::info::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Diff(args) => cmd::diff::run(args),
        Command::Convert(args) => cmd::convert::run(args),
        Command::Sql(args) => cmd::sql::run(args),
        Command::Trace2(c) => cmd::trace2::run(c),
        Command::Rtrace(c) => cmd::rtrace::run(c),
        Command::Xray(a) => cmd::xray::run(a),
        Command::Build(c) => cmd::build::run(c),
        Command::Record(c) => cmd::record::run(c),
        Command::Posix(c) => cmd::posix::run(c),
        // Dialect dispatch: add yours above this line (one arm).
        Command::Completions(a) => generate::completions(a),
    };
    match result {
        Ok(code) => code,
        // A reader that closed the pipe (`tracekit ... | head`) is not an
        // error to report: every verb ends here, quietly.
        Err(err) if cmd::closed_stdout(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("tracekit: {err}");
            ExitCode::from(if cmd::is_usage(&err) { 2 } else { 1 })
        }
    }
}
