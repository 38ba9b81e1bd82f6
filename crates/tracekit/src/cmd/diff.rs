//! `tracekit diff BEFORE AFTER`: what changed between two traces of one
//! dialect. Each dialect crate computes its comparison as data (a
//! `tracekit_report::Report`: `tracekit_trace2::diff`, `tracekit_xray::diff`,
//! `tracekit_kwinject::diff`, `tracekit_rtrace::report::diff`,
//! `tracekit_posix::diff`); this verb opens both inputs, checks that they
//! are of one dialect, and renders the report as text, `--json` or
//! `--html` (docs/diff.md).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use tracekit_report::Report;

use crate::cmd::{output, usage};
use crate::formats::{self, Dialect};
use crate::input::Input;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  tracekit diff before/ after/                       # two directories of Git Trace2 traces\n  tracekit diff -m ./app old.xray new.xray           # XRay logs of one binary\n  tracekit diff old.trace new.trace --json           # build traces, POSIX trace logs, ...\n  tracekit diff --html -o diff.html a.rtrace b.rtrace # one self-contained page\n\nBoth inputs must be of one dialect (exit 2 otherwise). Where both sides hold several samples (a Git command's runs, an XRay function's calls), the change is tested with the Mann-Whitney U test: `significance` says slower, faster, within spread or too few samples (docs/diff.md). --json prints the structure of docs/report-json.md (\"schema\": \"tracekit.report/1\")."
)]
pub struct Args {
    /// The base: a trace file or directory (`-` reads standard input).
    #[arg(value_name = "BEFORE")]
    pub before: PathBuf,
    /// What it is compared with.
    #[arg(value_name = "AFTER")]
    pub after: PathBuf,
    /// Print JSON (tracekit.report/1) instead of text.
    #[arg(long, conflicts_with = "html")]
    pub json: bool,
    /// Write one self-contained HTML page: needs -o FILE (or -o -).
    #[arg(long)]
    pub html: bool,
    /// Write the comparison here instead of standard output (`-`: standard
    /// output).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How many rows the ranked tables show (the rest are counted, with
    /// their totals).
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: usize,
    /// The instrumented binary both XRay logs come from (names function ids).
    #[arg(short = 'm', long = "instr-map", value_name = "BIN")]
    pub instr_map: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    if args.html && args.output.is_none() {
        return usage("diff --html writes a page: give -o FILE (or -o - for standard output)");
    }
    if args.before.as_os_str() == "-" && args.after.as_os_str() == "-" {
        return usage("diff: only one side can be standard input (-)");
    }
    let before = Input::open(&args.before)?;
    let after = Input::open(&args.after)?;
    let d = formats::detect(&before)?;
    let other = formats::detect(&after)?;
    if d.name() != other.name() {
        return usage(format!(
            "diff compares two traces of one dialect: {} is {}, {} is {}",
            before.display(),
            d.name(),
            after.display(),
            other.name()
        ));
    }
    let (report, code) = compare(d, &before, &after, &args)?;
    write(&[report], &args)?;
    Ok(code)
}

/// The comparison of two inputs of dialect `d`, as data.
pub fn compare(
    d: &'static dyn Dialect,
    before: &Input,
    after: &Input,
    args: &Args,
) -> Result<(Report, ExitCode)> {
    let name = d.name();
    if name == super::posix::PosixLog.name() {
        let mut b = super::posix::open_log(before)?;
        let mut a = super::posix::open_log(after)?;
        let r = tracekit_posix::diff::diff(
            &mut b,
            &before.display(),
            &mut a,
            &after.display(),
            args.top,
        );
        return Ok((r, ExitCode::SUCCESS));
    }
    if name == super::trace2::Trace2.name() {
        return trace2(before, after, args.top);
    }
    if name == super::rtrace::Rtrace.name() {
        let r = super::rtrace::diff_report(before, after, args.top)?;
        return Ok((r, ExitCode::SUCCESS));
    }
    if name == super::build::Kwinject.name() {
        let tb = super::build::read_trace(before)?;
        let ta = super::build::read_trace(after)?;
        // Response files a link names are read where the build left them.
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let (bb, ba) = (
            tracekit_kwinject::analysis::Build::with_files(&tb, &read),
            tracekit_kwinject::analysis::Build::with_files(&ta, &read),
        );
        let r = tracekit_kwinject::diff::builds(
            &bb,
            &before.display(),
            &ba,
            &after.display(),
            args.top,
        );
        let lost = tb.lost() + ta.lost();
        return Ok((r, ExitCode::from(u8::from(lost > 0))));
    }
    if name == super::ninja::NinjaLog.name() {
        let r = super::ninja::diff_report(before, after, args.top)?;
        return Ok((r, ExitCode::SUCCESS));
    }
    if name == super::xray::Xray.name() {
        let r = super::xray::diff_report(before, after, &args.instr_map, args.top)?;
        return Ok((r, ExitCode::SUCCESS));
    }
    usage(format!("diff: not available for {name} inputs"))
}

/// Renders `reports` as the arguments ask.
pub fn write(reports: &[Report], args: &Args) -> Result<()> {
    let failed = |e: std::io::Error| tracekit_core::Error::io(args.output.as_deref(), e);
    let mut out = output(args.output.as_deref())?;
    if args.html {
        tracekit_report::html::write(&mut out, reports).map_err(failed)?;
    } else if args.json {
        tracekit_report::json::write(&mut out, reports).map_err(failed)?;
    } else {
        tracekit_report::text::write(&mut out, reports).map_err(failed)?;
    }
    out.flush().map_err(failed)?;
    Ok(())
}

/// One side of a Trace2 comparison: the report of every source of `input`
/// (a file, a directory target, standard input), with the run times per
/// command; the warnings are printed.
fn trace2_side(
    input: &Input,
) -> Result<(
    tracekit_trace2::report::Report,
    std::collections::BTreeMap<tracekit_trace2::diff::CommandKey, Vec<i64>>,
    bool,
)> {
    use super::trace2::{for_each_source, Content};
    use tracekit_trace2::reader::for_each_record;
    use tracekit_trace2::report::{self, ReportBuilder};
    let mut builder = ReportBuilder::new(0);
    let samples = tracekit_trace2::diff::Samples::attach(&mut builder);
    let warnings = for_each_source(input, |name, format, content, warnings| {
        let id = builder.source(name);
        match content {
            Content::Mapped(map) => report::report_mmap(map, format, id, &mut builder, warnings),
            Content::Stream(r) => {
                for_each_record(r, format, |rec| -> Result<()> {
                    if let Some(ev) = rec.parse_or_warn(format, warnings) {
                        builder.add(&ev, id);
                    }
                    Ok(())
                })?;
            }
        }
        Ok(())
    })?;
    let rep = builder.finish();
    let lost = super::trace2::print_all_warnings(&warnings);
    Ok((rep, samples.take(), lost))
}

fn trace2(before: &Input, after: &Input, top: usize) -> Result<(Report, ExitCode)> {
    use tracekit_trace2::diff::{diff, Side};
    let (rb, sb, lb) = trace2_side(before)?;
    let (ra, sa, la) = trace2_side(after)?;
    let (nb, na) = (before.display(), after.display());
    let r = diff(
        &Side {
            name: &nb,
            report: &rb,
            samples: &sb,
        },
        &Side {
            name: &na,
            report: &ra,
            samples: &sa,
        },
        top,
    );
    // As `report`: records lost or unreadable make the exit status 1.
    Ok((r, ExitCode::from(u8::from(lb || la))))
}
