//! `tracekit convert`: its flags and help (the work is
//! `tracekit_dialects::convert`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use tracekit_dialects::convert::TARGETS;
use tracekit_dialects::options::ConvertOptions;
use tracekit_dialects::registry::{Target, DIALECTS};

use crate::cmd::otlp::OtlpArgs;

/// Every name `--to` accepts (each dialect's and the common ones).
fn target_names() -> clap::builder::PossibleValuesParser {
    let mut seen = std::collections::BTreeSet::new();
    let mut values = Vec::new();
    let all = TARGETS
        .iter()
        .chain(DIALECTS.iter().flat_map(|d| d.targets()));
    for t in all {
        if seen.insert(t.name()) {
            values.push(clap::builder::PossibleValue::new(t.name()).aliases(&t.names[1..]));
        }
    }
    clap::builder::PossibleValuesParser::new(values)
}

/// One target's lines in `--help`: its name, then what it writes (from
/// column 21).
fn target_help(out: &mut String, indent: &str, t: &Target) {
    let width = 19usize.saturating_sub(indent.len()).max(t.name().len() + 1);
    for (i, line) in t.about.lines().enumerate() {
        let name = if i == 0 { t.name() } else { "" };
        out.push_str(&format!("{indent}  {name:<width$}{line}\n"));
    }
}

/// `convert --help`'s text after the options, targets from the tables.
fn after_help() -> String {
    let mut s = String::from("Targets of every input:\n");
    for t in TARGETS {
        target_help(&mut s, "", t);
    }
    s.push_str("\nTargets of one dialect's input:\n");
    for d in DIALECTS {
        s.push_str(&format!("  {}:\n", d.name()));
        for t in d.targets() {
            target_help(&mut s, "  ", t);
        }
    }
    s.push_str(AFTER_TARGETS);
    s
}

const AFTER_TARGETS: &str = "\n\
Git Trace2: what is exact, what is derived (docs/formats/trace2.md):
  exact     every field a record carries, its own file:line included: a file
            converted to its own format and variant is byte for byte the same
  derived   the tr2_tgt_*.c line of signal/atexit/timer/counter written by
            another target: from the git release in the 'version' record
            (table of git 2.20.0 .. 2.55.0; other versions: nearest release
            below, with a warning); local time of day from EVENT's UTC time
            (set TZ to the producer's); PERF's t_abs where EVENT has none
  variant   the input's (brief stays brief); --brief/--full choose. A full
            variant from brief input skips each record lacking a field, naming
            it (time, file), never writing a made-up 00:00:00.000000
  skipped   a record the target cannot be written from is said at its line
            (FILE:LINE: warning) and skipped; the rest is converted (exit 1)

Examples:
  tracekit convert examples/trace2/clone.event.jsonl --to trace2-perf
  tracekit convert perf.log --to trace2-normal --brief
  tracekit convert event.jsonl --to chrome -o trace.json
  tracekit convert xray-log.app.XXXX -m ./app --to perfetto -o app.pftrace
  tracekit convert /var/log/git-trace2/ build.kwinject --to parquet -o tables/
  tracekit convert build.trace --to otlp --otlp-endpoint http://localhost:4318
  tracekit convert posix.log --to otlp -o posix.pb --redact '/home/[^/]+=/home/<user>'";

#[derive(clap::Args, Debug, Clone)]
#[command(after_help = after_help())]
pub struct Args {
    /// The trace to convert (`-` reads standard input).
    #[arg(value_name = "FILE")]
    pub input: PathBuf,
    /// More inputs (`--to parquet` only: all go into one set of tables).
    #[arg(value_name = "FILE|DIR")]
    pub more_inputs: Vec<PathBuf>,
    /// The output format (the targets are listed below).
    #[arg(long, value_name = "FORMAT", value_parser = target_names(), hide_possible_values = true)]
    pub to: String,
    /// Write here instead of standard output (`-` is standard output).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Write the brief variant (Trace2 targets: no time or file:line).
    /// Trace2 default: the input's variant.
    #[arg(long, conflicts_with = "full")]
    pub brief: bool,
    /// Write the full variant even from brief input (Trace2 targets; each
    /// record that lacks a field it needs is skipped with a warning).
    #[arg(long)]
    pub full: bool,
    /// The instrumented binary, for formats that need it to name things
    /// (XRay function ids).
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Option<PathBuf>,
    #[command(flatten)]
    pub otlp: OtlpArgs,
}

impl Args {
    /// The typed options the dialects read (flags checked here, once).
    pub fn options(&self) -> Result<ConvertOptions> {
        Ok(ConvertOptions {
            input: self.input.clone(),
            more_inputs: self.more_inputs.clone(),
            to: self.to.clone(),
            output: self.output.clone(),
            brief: self.brief,
            full: self.full,
            instr_map: self.instr_map.clone(),
            otlp: self.otlp.options()?,
        })
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    tracekit_dialects::convert::run(&args.options()?)
}
