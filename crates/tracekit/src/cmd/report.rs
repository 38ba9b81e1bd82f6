//! `tracekit report`: analyse traces.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::cmd::output;
use crate::formats;
use tracekit_dialects::input::Input;
use tracekit_dialects::options::ReportOptions;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  tracekit report trace.event.jsonl\n  tracekit report --json /var/log/git-trace2/ > report.json\n  tracekit report trace.xray -m ./app\n  tracekit report --html -o report.html trace.xray -m ./app   # one self-contained page\n  tracekit report --diff before.rtrace after.rtrace   # what grew (memory traces)\n  tracekit report build/                               # a ninja build directory\n  tracekit report --diff old.ninja_log build/          # the targets that got slower\n\n--json prints the structure of docs/report-json.md (\"schema\": \"tracekit.report/1\") for Git Trace2, XRay traces, build traces, memory traces and POSIX trace logs; .ninja_log files print their own JSON until they move to it. --html needs -o (a file, or - for standard output) and is available for those five (tracekit report --html -o mem.html app.tkmem)."
)]
pub struct Args {
    /// Trace files or directories (`-` reads standard input). Files of one
    /// dialect are analysed together (e.g. Trace2 sessions are stitched
    /// across files).
    #[arg(required = true, value_name = "FILE|DIR")]
    pub inputs: Vec<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, conflicts_with = "html")]
    pub json: bool,
    /// Write one self-contained HTML page (inline SVG charts, sortable
    /// tables; loads nothing from anywhere): needs -o FILE (or -o -).
    #[arg(long)]
    pub html: bool,
    /// Write the report here instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How many entries the ranked tables show.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: usize,
    /// The instrumented binary, for formats that need it to name things
    /// (XRay function ids).
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Option<PathBuf>,
    /// Compare two recordings of the same program: FILE A (the base) and
    /// FILE B; shows what grew from A to B (memory traces), or the targets
    /// that got slower (two .ninja_log files or ninja build directories).
    /// `tracekit diff A B` does this for every dialect (with --html).
    #[arg(long)]
    pub diff: bool,
}

impl Args {
    /// The typed options the dialects read.
    pub fn options(&self) -> ReportOptions {
        ReportOptions {
            json: self.json,
            html: self.html,
            output: self.output.clone(),
            top: self.top,
            instr_map: self.instr_map.clone(),
        }
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    let options = args.options();
    let inputs = args
        .inputs
        .iter()
        .map(|p| Input::open(p))
        .collect::<Result<Vec<_>>>()?;
    if args.diff {
        let [base, new] = &inputs[..] else {
            anyhow::bail!("--diff compares two traces: A (the base) and B");
        };
        if args.html {
            // The page is `tracekit diff`'s (text and JSON keep the form
            // `report --diff` always printed).
            return crate::cmd::diff::run(crate::cmd::diff::Args {
                before: args.inputs[0].clone(),
                after: args.inputs[1].clone(),
                json: false,
                html: true,
                output: args.output.clone(),
                top: args.top,
                instr_map: args.instr_map.clone(),
            });
        }
        let dialect = formats::detect(base)?;
        let other = formats::detect(new)?;
        if dialect.name() != other.name() {
            anyhow::bail!(
                "--diff: {} is {}, {} is {}",
                base.display(),
                dialect.name(),
                new.display(),
                other.name()
            );
        }
        return dialect.diff(base, new, &options);
    }
    let groups = formats::group(inputs)?;
    if args.html {
        if let Some((d, _)) = groups.iter().find(|(d, _)| !d.reports_as_data()) {
            eprintln!(
                "tracekit: report --html: not available for {} yet (Git Trace2, XRay traces, build traces, memory traces and POSIX trace logs have it)",
                d.name()
            );
            return Ok(ExitCode::from(2));
        }
        if args.output.is_none() {
            eprintln!(
                "tracekit: report --html writes a page: give -o FILE (or -o - for standard output)"
            );
            return Ok(ExitCode::from(2));
        }
    }
    let mut code = ExitCode::SUCCESS;
    // The dialects whose reports are data share one output: text as each
    // group is analysed, one JSON document or one page for all at the end.
    let mut out: Option<Box<dyn Write>> = None;
    let mut collected = Vec::new();
    let failed = |e: std::io::Error| tracekit_core::Error::io(args.output.as_deref(), e);
    for (dialect, group) in groups {
        if !dialect.reports_as_data() {
            if let Some(o) = out.as_mut() {
                o.flush().map_err(failed)?;
            }
            let c = dialect.report(&group, &options)?;
            if c != ExitCode::SUCCESS {
                code = c;
            }
            continue;
        }
        let (reports, c) = dialect.reports(&group, &options)?;
        if c != ExitCode::SUCCESS {
            code = c;
        }
        if args.html || args.json {
            collected.extend(reports);
            continue;
        }
        let o = match out.as_mut() {
            Some(o) => o,
            None => out.insert(output(args.output.as_deref())?),
        };
        tracekit_report::text::write(o, &reports).map_err(failed)?;
    }
    if args.html || (args.json && !collected.is_empty()) {
        let o = match out.as_mut() {
            Some(o) => o,
            None => out.insert(output(args.output.as_deref())?),
        };
        if args.html {
            tracekit_report::html::write(o, &collected).map_err(failed)?;
        } else {
            tracekit_report::json::write(o, &collected).map_err(failed)?;
        }
    }
    if let Some(mut o) = out {
        o.flush().map_err(failed)?;
    }
    Ok(code)
}
