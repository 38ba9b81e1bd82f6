//! sp-rtrace: the dialect behind `info`/`report`/`convert`, and
//! `tracekit rtrace postproc|report`.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use tracekit_core::timeline::Sink;
use tracekit_rtrace::heaptrack;
use tracekit_rtrace::postproc::{self, CallAddress, Options, SortOrder};
use tracekit_rtrace::recording::set::Recording;
use tracekit_rtrace::report::{self, Metric, Symbolise};

use crate::cmd::{convert, info, output};
use crate::formats::{Dialect, Target, Writer};
use crate::input::Input;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Post-process a text trace like sp-rtrace-postproc: list leaks,
    /// compress identical backtraces, resolve addresses, filter.
    Postproc(PostprocArgs),
    /// Leak, peak and allocation-site report, with SVG plots.
    Report(ReportArgs),
    /// Run a command under the memory/fd recorder and write an sp-rtrace
    /// text trace (the same as `tracekit record mem`).
    Record(RecordArgs),
    /// Turn a raw recording (`record mem --raw`) into the sp-rtrace text
    /// trace `record mem` would have written.
    Decode(DecodeArgs),
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
A raw recording (`tracekit record mem --raw`) holds one process image's
events as the recorder received them (binary, docs/formats/rtrace.md §14):
decoding restores the global order of the threads' events and writes each
backtrace as text, which is most of the work `record mem` does after the
command ends. `tracekit rtrace postproc` and `tracekit rtrace report` read
raw recordings too (decoding them as they go).

Examples:
  tracekit record mem --raw -o app.tkrt -- ./app
  tracekit rtrace decode app.tkrt -o app.rtrace
  tracekit rtrace report app.tkrt")]
pub struct DecodeArgs {
    /// The raw recording.
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// Write the text trace here (default, or `-`: standard output).
    #[arg(short = 'o', long, value_name = "OUT")]
    pub output: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Preloads tracekit's recorder (built into this executable, or the library
named by $TRACEKIT_PRELOAD_LIB) into CMD and its children. The recording is
one directory, OUT (default tracekit-mem.<pid>): one sp-rtrace text trace
per process image (<pid>-<n>.rtrace: fork children are new pids, exec
starts image n+1) and recording.json, which lists them, the command's own
first, with parent, program and how each ended. `tracekit report OUT`,
`tracekit convert OUT` and `tracekit rtrace postproc OUT` take the whole
recording; each trace is also a plain sp-rtrace file. `-o -` writes the
traces to standard output instead, one after another. Recording again into
the same OUT replaces its traces. The exit status is the command's.

Events travel through a POSIX trace stream in /dev/shm that tracekit reads
while CMD runs (a full stream makes CMD wait, nothing is dropped silently).
Backtraces are unwound from the programs' DWARF call-frame information
(.eh_frame), so code built without frame pointers (-O2, Debian packages)
gets complete stacks: whole stacks by default, up to 64 frames (heaptrack's
limit too); each trace's header says the depth. A process killed by a
signal or a crash keeps every event it recorded, and each trace ends with a
'## tracekit:' line saying how the process ended (exit status or signal).

With --raw, the text is not made: each process image's recording is kept as
tracekit received it (OUT/<pid>-<n>.tkrt), like heaptrack -r; `tracekit
rtrace decode` turns one into its text trace later, and the readers take
the directory or a file as they are.

Examples:
  tracekit record mem -o app.mem -- ./app --flag
  tracekit report app.mem
  tracekit record mem --modules memory,file --backtrace-depth 16 -- make check
  tracekit rtrace postproc app.mem -lcr            # leaks by backtrace, resolved
  tracekit record mem --raw -o app.raw -- ./app    # decode later
  tracekit rtrace decode app.raw/<pid>-0.tkrt -o app.rtrace")]
pub struct RecordArgs {
    /// What to record: memory (malloc family), file (descriptors and
    /// FILE streams), comma-separated.
    #[arg(long, default_value = "memory", value_name = "LIST")]
    pub modules: String,
    /// Return addresses kept per allocation (0 = none; default and most:
    /// 64, the whole stack but for deeper recursion).
    #[arg(
        short = 'b',
        long = "backtrace-depth",
        default_value_t = tracekit_rtrace_preload::wire::MAX_DEPTH,
        value_name = "N"
    )]
    pub backtrace_depth: usize,
    /// The recording's directory (default: tracekit-mem.<pid> in the
    /// current directory; `-`: the text traces to standard output).
    #[arg(short = 'o', long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Keep the binary recordings instead of writing text traces (decode
    /// them later with `tracekit rtrace decode`).
    #[arg(long)]
    pub raw: bool,
    /// The command and its arguments.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
The options and the output are those of sp-rtrace-postproc (text input);
output is written to standard output unless -o is given.

Examples:
  tracekit rtrace postproc trace.rtrace -lc            # leaks grouped by backtrace
  tracekit rtrace postproc trace.rtrace -lcr -o leaks.txt
  tracekit rtrace postproc -C 2 -s count -c trace.rtrace
  cat trace.rtrace | tracekit rtrace postproc - --exclude seen.idx")]
pub struct PostprocArgs {
    /// The text trace (`-` or nothing: standard input).
    #[arg(value_name = "IN")]
    pub input: Option<PathBuf>,
    /// The input file, sp-rtrace-postproc style (same as IN).
    #[arg(
        short = 'i',
        long = "input-file",
        value_name = "FILE",
        conflicts_with = "input"
    )]
    pub input_file: Option<PathBuf>,
    /// Write here instead of standard output (`-` is standard output).
    #[arg(short = 'o', long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Remove matched allocation/free pairs and all frees; adds a leak
    /// summary per resource type.
    #[arg(short = 'l', long = "filter-leaks")]
    pub filter_leaks: bool,
    /// Group calls with identical backtraces (sorted with --sort).
    #[arg(short = 'c', long)]
    pub compress: bool,
    /// Resolve backtrace addresses to `function() from module` through the
    /// trace's memory maps and the modules' ELF symbol tables.
    #[arg(short = 'r', long)]
    pub resolve: bool,
    /// Group order with --compress: size, size-asc (default), count,
    /// count-asc.
    #[arg(short = 's', long, value_name = "ORDER")]
    pub sort: Option<String>,
    /// Keep calls whose context mask intersects MASK (hex); 0 keeps the
    /// calls made outside every context.
    #[arg(short = 'C', long, value_name = "MASK")]
    pub context: Option<String>,
    /// Keep calls of these resource types (hex bit mask, as in the
    /// `<id>` registry lines).
    #[arg(short = 'R', long, value_name = "MASK")]
    pub resource: Option<String>,
    /// Trim backtraces to N frames.
    #[arg(short = 'b', long = "backtrace-depth", value_name = "N")]
    pub backtrace_depth: Option<usize>,
    /// Keep only the calls whose indices are listed in FILE (one a line).
    #[arg(long, value_name = "FILE")]
    pub include: Option<PathBuf>,
    /// Drop the calls whose indices are listed in FILE (ignored with
    /// --include).
    #[arg(long, value_name = "FILE")]
    pub exclude: Option<PathBuf>,
    /// Keep calls whose backtrace passes through <start>+<size> (hex) of
    /// the module whose path contains <target>.
    #[arg(long = "call-address", value_name = "TARGET:START+SIZE")]
    pub call_address: Option<String>,
    /// Look modules up under this directory (cross resolving).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Accepted for compatibility: output is always text.
    #[arg(short = 't', long)]
    pub text: bool,
    /// Accepted for compatibility (sp-rtrace-postproc parses it but never
    /// implemented it): arguments are kept.
    #[arg(short = 'a', long = "remove-args", hide = true)]
    pub remove_args: bool,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Sections (heaptrack_print's): most calls to allocation functions, peak
consumers (bytes allocated at the time of the peak), leaks, most temporary
allocations (freed by the very next call), largest allocations; each place
that called an allocation function with its backtraces. Frames are named
from DWARF (file:line, inlined functions) where the module or its separate
debug file has it (build id or .gnu_debuglink under each --debug-dir, by
default /usr/lib/debug: Debian's -dbgsym and libc6-dbg packages), else from
.symtab/.dynsym; C++ and Rust names are demangled. A frame no symbol covers
shows as module+0xOFFSET (the module's own address, for addr2line -e).

Examples:
  tracekit rtrace report trace.rtrace
  tracekit rtrace report trace.rtrace --timeline-svg live.svg --flame-svg leaks.svg
  tracekit rtrace report trace.rtrace --flame-bytes-svg bytes.svg --flame-count-svg calls.svg
  tracekit rtrace report --diff before.rtrace after.rtrace
  tracekit rtrace report --json trace.rtrace > report.json")]
pub struct ReportArgs {
    /// The text trace (`-` reads standard input).
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// Compare with this earlier recording of the same program: what grew
    /// from BASE to IN.
    #[arg(long, value_name = "BASE")]
    pub diff: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write the report here instead of standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// How many places each section lists.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: usize,
    /// Write live bytes over time as an SVG plot.
    #[arg(long, value_name = "FILE")]
    pub timeline_svg: Option<PathBuf>,
    /// Write a flame graph of leaked bytes (SVG).
    #[arg(long, value_name = "FILE")]
    pub flame_svg: Option<PathBuf>,
    /// Write a flame graph of allocated bytes (SVG).
    #[arg(long, value_name = "FILE")]
    pub flame_bytes_svg: Option<PathBuf>,
    /// Write a flame graph of calls to allocation functions (SVG).
    #[arg(long, value_name = "FILE")]
    pub flame_count_svg: Option<PathBuf>,
    /// Look for separate debug files here (repeatable; default
    /// /usr/lib/debug, or $TRACEKIT_DEBUG_DIRS, colon-separated).
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub debug_dirs: Vec<PathBuf>,
    /// Look modules up under this directory (a copy of the recorded
    /// system's files).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Do not resolve addresses (faster; no module files needed).
    #[arg(long)]
    pub no_resolve: bool,
}

pub fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Postproc(a) => run_postproc(a),
        Command::Report(a) => run_report(a),
        Command::Record(a) => record_mem(a),
        Command::Decode(a) => run_decode(a),
    }
}

/// The recorder library: `$TRACEKIT_PRELOAD_LIB`, or the copy built into
/// this executable written to `dir`.
fn preload_library(dir: &Path) -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("TRACEKIT_PRELOAD_LIB") {
        return Ok(PathBuf::from(p));
    }
    let shim = tracekit_rtrace_preload::SHIM;
    if shim.is_empty() {
        bail!("recording is supported on x86_64 Linux only");
    }
    let path = dir.join("libtracekit_rtrace_shim.so");
    std::fs::write(&path, shim).map_err(|e| tracekit_core::Error::io(Some(&path), e))?;
    Ok(path)
}

/// `tracekit record mem`: run CMD with the recorder preloaded, then turn
/// each recorded process image into an sp-rtrace text trace.
pub fn record_mem(a: RecordArgs) -> Result<ExitCode> {
    for m in a.modules.split(',') {
        if m != "memory" && m != "file" {
            bail!("--modules: unknown module {m} (memory, file)");
        }
    }
    if a.raw && a.output.as_deref() == Some(Path::new("-")) {
        bail!("--raw writes files: give -o a directory");
    }
    if a.backtrace_depth > tracekit_rtrace_preload::wire::MAX_DEPTH {
        bail!(
            "--backtrace-depth: at most {}",
            tracekit_rtrace_preload::wire::MAX_DEPTH
        );
    }
    // The recorder library goes to a private temporary directory (removed
    // when `lib_dir` is dropped).
    let lib_dir = tempfile::Builder::new()
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .prefix("tracekit-rtrace-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let lib = preload_library(lib_dir.path())?;
    let preload = match std::env::var_os("LD_PRELOAD") {
        Some(old) if !old.is_empty() => {
            let mut v = lib.clone().into_os_string();
            v.push(":");
            v.push(old);
            v
        }
        _ => lib.clone().into_os_string(),
    };
    record_into(preload, &a)
}

/// Runs the command with the shim writing into a POSIX trace stream that
/// a reader thread splits into per-image files, then writes them as the
/// library's [`Outputs`] says (text traces, or with `--raw` the recordings).
///
/// [`Outputs`]: tracekit_rtrace::recording::capture::Outputs
fn record_into(preload: std::ffi::OsString, a: &RecordArgs) -> Result<ExitCode> {
    use tracekit_rtrace::recording::capture::{Capture, Outputs, Written};
    let stdout = a.output.as_deref() == Some(Path::new("-"));
    let outputs = Outputs {
        dir: a.output.clone().filter(|_| !stdout),
        raw: a.raw,
        stdout,
        command: a
            .command
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect(),
    };
    if let Some(dir) = &outputs.dir {
        // Made (or an earlier recording's traces removed) before the
        // command runs: a bad -o fails now, saying why.
        outputs
            .prepare(0)
            .map_err(|e| tracekit_core::Error::io(Some(dir), e))?;
    }
    let capture = Capture::start_for(&outputs, a.backtrace_depth)
        .with_context(|| "cannot set up the recorder's trace stream".to_string())?;
    let spawned = std::process::Command::new(&a.command[0])
        .args(&a.command[1..])
        .env("LD_PRELOAD", preload)
        .envs(capture.env(&a.modules))
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            // Nothing was recorded: no empty recording is left behind.
            drop(capture);
            if let Some(dir) = &outputs.dir {
                let _ = std::fs::remove_dir(dir);
            }
            return Err(anyhow::Error::new(e)
                .context(format!("cannot run {}", a.command[0].to_string_lossy())));
        }
    };
    let root = child.id() as i32;
    let status = child
        .wait()
        .with_context(|| format!("waiting for {}", a.command[0].to_string_lossy()))?;
    let recorded = capture
        .finish_into(&outputs, root, status)
        .with_context(|| "reading the recorder's trace stream".to_string())?;

    let stats = &recorded.stats;
    // -q: no summary lines; what was lost is still said.
    let quiet = crate::progress::quiet();
    if stats.spilled_events > 0 && !quiet {
        eprintln!(
            "tracekit: {} event(s) of processes that did not exit normally were read from their spill files",
            stats.spilled_events
        );
    }
    if stats.refused_writes > 0 && !quiet {
        // The stream's lost count covers more than events lost for good:
        // the shim retries a refused write until there is room.
        eprintln!(
            "tracekit: the trace stream counted {} lost write(s): refused while it was full (the writer waited and retried), skipped slots of writers that died mid-write, or events given up (those show as lost below)",
            stats.refused_writes
        );
    }
    if stats.orphan_events + stats.damaged_events + stats.incomplete_meta > 0 {
        eprintln!(
            "tracekit: warning: {} event(s) of processes whose header was lost, {} damaged event(s), {} incomplete header/maps record(s): not in the traces",
            stats.orphan_events, stats.damaged_events, stats.incomplete_meta
        );
    }
    let wrote = recorded.write(|out, written| match written {
        Written::Raw if !quiet => eprintln!("tracekit: {}: raw recording", out.display()),
        Written::Raw => {}
        Written::Text(info, stats) => {
            if !quiet || stats.lost > 0 || stats.truncated_bytes > 0 {
                eprintln!(
                    "tracekit: {}: {}",
                    out.display(),
                    describe_image(&info, &stats)
                )
            }
        }
    });
    if let Err(e) = wrote {
        // Nothing recorded (a static program): no empty directory stays
        // (the scratch directory inside goes with `recorded`).
        let dir = recorded.dir.clone();
        drop(recorded);
        if let Some(dir) = dir {
            let _ = std::fs::remove_dir(dir);
        }
        return Err(e.into());
    }
    if let (Some(dir), false) = (&recorded.dir, quiet) {
        eprintln!(
            "tracekit: {}: the recording, {} process image(s) (tracekit report {})",
            dir.display(),
            recorded.images.len(),
            dir.display()
        );
    }
    use std::os::unix::process::ExitStatusExt;
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c.clamp(0, 255) as u8),
        (None, Some(sig)) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        _ => ExitCode::from(1),
    })
}

/// The text trace of a raw recording.
fn run_decode(a: DecodeArgs) -> Result<ExitCode> {
    let out = output(a.output.as_deref())?;
    let (info, stats) = tracekit_rtrace::recording::decode_file(&a.input, out)?;
    if !crate::progress::quiet() {
        eprintln!(
            "tracekit: {}: {}",
            a.input.display(),
            describe_image(&info, &stats)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `executable (N allocations, M releases; how it ended, losses)`.
fn describe_image(
    info: &tracekit_rtrace::recording::RecordingInfo,
    stats: &tracekit_rtrace::recording::DecodeStats,
) -> String {
    format!(
        "{} ({} allocations, {} releases{}{}{})",
        info.executable,
        stats.allocs,
        stats.frees,
        match info.end {
            Some(end) => format!("; {}", tracekit_rtrace::recording::describe_end(end)),
            None => String::new(),
        },
        if stats.lost > 0 {
            format!(", {} events lost", stats.lost)
        } else {
            String::new()
        },
        if stats.truncated_bytes > 0 {
            format!(", {} bytes truncated", stats.truncated_bytes)
        } else {
            String::new()
        },
    )
}

fn hex_mask(s: &str, what: &str) -> Result<u32> {
    u32::from_str_radix(s.trim_start_matches("0x"), 16)
        .with_context(|| format!("invalid {what} mask: {s}"))
}

fn open_input(path: Option<&Path>) -> Result<(Input, String)> {
    let p = path.unwrap_or(Path::new("-"));
    let input = Input::open(p)?;
    let name = input.display();
    Ok((input, name))
}

fn run_postproc(a: PostprocArgs) -> Result<ExitCode> {
    let sort = match &a.sort {
        Some(s) => Some(SortOrder::parse(s).with_context(|| {
            format!("--sort: unknown order {s} (size, size-asc, count, count-asc)")
        })?),
        None => None,
    };
    if sort.is_some() && !a.compress {
        bail!("--sort needs --compress (it orders the backtrace groups)");
    }
    let read_index = |p: &PathBuf| -> Result<_> {
        let text = std::fs::read_to_string(p).map_err(|e| tracekit_core::Error::io(Some(p), e))?;
        Ok(postproc::parse_index_list(&text))
    };
    let include = a.include.as_ref().map(read_index).transpose()?;
    let exclude = match (&include, &a.exclude) {
        (Some(_), Some(_)) => {
            if !crate::progress::quiet() {
                eprintln!("tracekit: --exclude is ignored because --include is given");
            }
            None
        }
        (None, Some(p)) => Some(read_index(p)?),
        _ => None,
    };
    let opts = Options {
        filter_leaks: a.filter_leaks,
        compress: a.compress,
        resolve: a.resolve,
        sort,
        context: a
            .context
            .as_deref()
            .map(|s| hex_mask(s, "context"))
            .transpose()?,
        resource: a
            .resource
            .as_deref()
            .map(|s| hex_mask(s, "resource"))
            .transpose()?,
        backtrace_depth: a.backtrace_depth,
        include,
        exclude,
        call_address: match &a.call_address {
            Some(s) => Some(CallAddress::parse(s).with_context(|| {
                format!("--call-address: expected <target>:<start>+<size> (hex), got {s}")
            })?),
            None => None,
        },
        root: a.root.clone(),
    };
    let path = a.input.as_deref().or(a.input_file.as_deref());
    let (input, _) = open_input(path)?;
    // A recording: each process image's trace, post-processed on its own.
    let images = match recording_of(&input)? {
        Some(rec) => {
            let outs = image_outputs(&rec, a.output.as_deref(), "rtrace", true)?;
            rec.images
                .iter()
                .map(|i| i.path.clone())
                .map(Some)
                .zip(outs)
                .collect()
        }
        None => vec![(None, a.output.clone())],
    };
    for (image, out_path) in images {
        let input = match &image {
            Some(p) => Input::open(p)?,
            None => Input::open(path.unwrap_or(Path::new("-")))?,
        };
        let out = output(out_path.as_deref())?;
        let stats =
            postproc::run(Rtrace::text(&input)?, &opts, out).map_err(|e| with_name(e, &input))?;
        if !crate::progress::quiet() {
            super::print_warnings(input.display(), &stats.warnings);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The recording `record mem` wrote, if `input` is its directory.
fn recording_of(input: &Input) -> Result<Option<Recording>> {
    if !input.is_dir {
        return Ok(None);
    }
    Ok(Some(Recording::open(&input.path)?))
}

/// Where the output for each image of `rec` goes (`None`: standard
/// output): all to standard output one after another (text outputs only),
/// or with `-o`, the file itself for a recording of one image, else a
/// directory made for them, `<pid>-<n>.<ext>` each.
fn image_outputs(
    rec: &Recording,
    out: Option<&Path>,
    ext: &str,
    text: bool,
) -> Result<Vec<Option<PathBuf>>> {
    let n = rec.images.len();
    match out.filter(|p| p.as_os_str() != "-") {
        None if text || n == 1 => Ok(vec![None; n]),
        None => bail!(
            "{}: a recording of {n} process images: give -o a directory for their {ext} files",
            rec.dir.display()
        ),
        Some(p) if n == 1 => Ok(vec![Some(p.to_path_buf())]),
        Some(dir) => {
            tracekit_core::files::create_private_dir(dir)
                .map_err(|e| tracekit_core::Error::io(Some(dir), e))?;
            Ok(rec
                .images
                .iter()
                .map(|i| Some(dir.join(format!("{}-{}.{ext}", i.pid, i.n))))
                .collect())
        }
    }
}

fn with_name(e: tracekit_core::Error, input: &Input) -> anyhow::Error {
    if input.is_stdin() {
        e.into()
    } else {
        e.in_file(&input.path).into()
    }
}

/// How frames are named: the system's debug directory unless
/// `$TRACEKIT_DEBUG_DIRS` or `--debug-dir` say otherwise.
fn symbolise(resolve: bool, debug_dirs: &[PathBuf], root: Option<&Path>) -> Symbolise {
    if !resolve {
        return Symbolise::none();
    }
    let mut sym = Symbolise::system();
    if !debug_dirs.is_empty() {
        sym.debug_dirs = debug_dirs.to_vec();
    } else if let Some(v) = std::env::var_os("TRACEKIT_DEBUG_DIRS") {
        sym.debug_dirs = std::env::split_paths(&v).collect();
    }
    if let Some(r) = root {
        sym.root = Some(r.to_path_buf());
        sym.debug_dirs = sym
            .debug_dirs
            .iter()
            .map(|d| r.join(d.strip_prefix("/").unwrap_or(d)))
            .collect();
    }
    sym
}

fn analyse(input: &Input, top: usize, sym: &Symbolise) -> Result<report::Report> {
    report::analyse_with(Rtrace::text(input)?, top, sym).map_err(|e| with_name(e, input))
}

fn write_svg(path: &Path, f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let mut out = output(Some(path))?;
    f(&mut out).map_err(|e| tracekit_core::Error::io(Some(path), e))?;
    out.flush()
        .map_err(|e| tracekit_core::Error::io(Some(path), e))?;
    Ok(())
}

fn write_diff(
    base: &Input,
    new: &Input,
    top: usize,
    sym: &Symbolise,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let a = analyse(base, usize::MAX, sym)?;
    let b = analyse(new, usize::MAX, sym)?;
    let d = report::diff(&a, &b, top);
    if json {
        serde_json::to_writer_pretty(&mut *out, &d.to_json(&base.display(), &new.display()))?;
        writeln!(out)?;
    } else {
        d.write_text(&mut *out, &base.display(), &new.display())?;
    }
    Ok(())
}

/// Analyses every image of a recording and writes the whole: a table of
/// the processes (parent, program, calls, peak, leaks, how it ended),
/// then each image's report (JSON: the same under `processes`).
fn write_recording_report(
    rec: &Recording,
    top: usize,
    sym: &Symbolise,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let mut reports = Vec::with_capacity(rec.images.len());
    for image in &rec.images {
        let input = Input::open(&image.path)?;
        reports.push((input.display(), analyse(&input, top, sym)?));
    }
    let whole = report::RecordingReport {
        recording: rec,
        reports,
    };
    if json {
        serde_json::to_writer_pretty(&mut *out, &whole.to_json())?;
        writeln!(out)?;
    } else {
        whole.write_text(&mut *out)?;
    }
    Ok(())
}

/// `tracekit diff` of two memory traces (a recording of one process
/// stands for its trace), as data.
pub(crate) fn diff_report(
    before: &Input,
    after: &Input,
    top: usize,
) -> Result<tracekit_report::Report> {
    let sym = symbolise(true, &[], None);
    let before = single_trace(Input::open(&before.path)?)?;
    let after = single_trace(Input::open(&after.path)?)?;
    let a = analyse(&before, usize::MAX, &sym)?;
    let b = analyse(&after, usize::MAX, &sym)?;
    Ok(report::diff_report(
        &a,
        &b,
        &before.display(),
        &after.display(),
        top,
    ))
}

/// The one trace of `input`: itself, or the only image of a recording
/// (a diff compares one process with one process).
fn single_trace(input: Input) -> Result<Input> {
    let Some(rec) = recording_of(&input)? else {
        return Ok(input);
    };
    match rec.images.as_slice() {
        [one] => Input::open(&one.path),
        images => bail!(
            "{}: a recording of {} process images; --diff compares two traces: name one, e.g. {}",
            rec.dir.display(),
            images.len(),
            images
                .first()
                .map_or(String::new(), |i| i.path.display().to_string())
        ),
    }
}

fn run_report(a: ReportArgs) -> Result<ExitCode> {
    let (input, name) = open_input(Some(&a.input))?;
    let sym = symbolise(!a.no_resolve, &a.debug_dirs, a.root.as_deref());
    let mut out = output(a.output.as_deref())?;
    if let Some(base) = &a.diff {
        let base = single_trace(Input::open(base)?)?;
        let input = single_trace(input)?;
        write_diff(&base, &input, a.top, &sym, a.json, &mut out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(rec) = recording_of(&input)? {
        if a.timeline_svg.is_some()
            || a.flame_svg.is_some()
            || a.flame_bytes_svg.is_some()
            || a.flame_count_svg.is_some()
        {
            bail!(
                "{}: the SVG plots are made per process: name one trace of the recording (tracekit convert {} --to flamegraph -o DIR makes them all)",
                rec.dir.display(),
                rec.dir.display()
            );
        }
        write_recording_report(&rec, a.top, &sym, a.json, &mut out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    let rep = analyse(&input, a.top, &sym)?;
    if a.json {
        serde_json::to_writer_pretty(&mut out, &rep.to_json(&name))?;
        writeln!(out)?;
    } else {
        rep.write_text(&mut out, &name)?;
    }
    out.flush()?;
    if let Some(p) = &a.timeline_svg {
        write_svg(p, |w| rep.write_timeline_svg(w))?;
    }
    for (path, metric) in [
        (&a.flame_svg, Metric::Leaked),
        (&a.flame_bytes_svg, Metric::Allocated),
        (&a.flame_count_svg, Metric::Allocations),
    ] {
        if let Some(p) = path {
            write_svg(p, |w| rep.write_flamegraph(metric, w))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub struct Rtrace;

impl Rtrace {
    /// The text of an input, what every reader here takes: a raw recording
    /// (`record mem --raw`) is decoded as it is read; anything else is read
    /// as it is. Both show a progress bar over the file's size.
    fn text(input: &Input) -> Result<Box<dyn BufRead>> {
        if !tracekit_rtrace::recording::sniff(&input.head) {
            return input.reader();
        }
        if input.is_stdin() {
            bail!("a raw recording (record mem --raw) is read from a file, not standard input");
        }
        let size = std::fs::metadata(&input.path).map_or(0, |m| m.len());
        let progress = crate::progress::Progress::bytes(size, &input.display());
        let decoder = tracekit_rtrace::recording::Decoder::open(&input.path)?
            .on_progress(move |n| progress.inc(n));
        Ok(Box::new(decoder))
    }

    fn map_timeline(
        text: Box<dyn BufRead>,
        input: &Input,
        sink: &mut dyn Sink,
    ) -> Result<ExitCode> {
        let (stats, warnings) =
            tracekit_rtrace::timeline::map_trace(text, &input.display().to_string(), sink)
                .map_err(|e| with_name(e, input))?;
        super::print_warnings(input.display(), &warnings);
        if stats.untimed > 0 {
            eprintln!(
                "tracekit: {}: {} calls have no timestamp: they count in what is in use but are not placed on the timeline",
                input.display(),
                stats.untimed
            );
        }
        Ok(ExitCode::SUCCESS)
    }

    /// A recording's images in one timeline (a process track each; they
    /// share the recorder's monotonic clock).
    fn map_recording(rec: &Recording, input: &Input, sink: &mut dyn Sink) -> Result<ExitCode> {
        let mut inputs = Vec::with_capacity(rec.images.len());
        for i in &rec.images {
            inputs.push(Input::open(&i.path)?);
        }
        let traces = inputs.iter().map(|i| {
            Rtrace::text(i)
                .map(|t| (t, i.display()))
                .map_err(|e| tracekit_core::Error::Other(format!("{e:#}")))
        });
        let per = tracekit_rtrace::timeline::map_traces(traces, &input.display(), sink)?;
        for (name, stats, warnings) in per {
            super::print_warnings(&name, &warnings);
            if stats.untimed > 0 {
                eprintln!(
                    "tracekit: {name}: {} calls have no timestamp: they count in what is in use but are not placed on the timeline",
                    stats.untimed
                );
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// A raw recording decoded once into an anonymous scratch file, for
/// [`Rtrace::tables`]' two passes (the generic tables through
/// [`Dialect::timeline`], then the allocation rows): everything else is
/// [`Rtrace`]'s.
struct Decoded(std::fs::File);

impl Decoded {
    fn decode(input: &Input) -> Result<Decoded> {
        let mut file = tempfile::tempfile().context("cannot create a temporary file")?;
        let mut out = std::io::BufWriter::with_capacity(1 << 16, &mut file);
        std::io::copy(&mut Rtrace::text(input)?, &mut out)
            .and_then(|_| out.flush())
            .map_err(|e| tracekit_core::Error::io(Some(&input.path), e))?;
        drop(out);
        Ok(Decoded(file))
    }

    /// The text, from its start.
    fn text(&self) -> Result<Box<dyn BufRead>> {
        use std::io::{Seek, SeekFrom};
        let mut f = self.0.try_clone()?;
        f.seek(SeekFrom::Start(0))?;
        Ok(Box::new(std::io::BufReader::with_capacity(1 << 20, f)))
    }
}

impl Dialect for Decoded {
    fn name(&self) -> &'static str {
        Rtrace.name()
    }
    fn sniff(&self, input: &Input) -> bool {
        Rtrace.sniff(input)
    }
    fn info(&self, inputs: &[Input], args: &info::Args) -> Result<ExitCode> {
        Rtrace.info(inputs, args)
    }
    fn report(&self, inputs: &[Input], args: &crate::cmd::report::Args) -> Result<ExitCode> {
        Rtrace.report(inputs, args)
    }
    fn targets(&self) -> &'static [Target] {
        Rtrace.targets()
    }
    fn timeline(
        &self,
        input: &Input,
        _args: &convert::Args,
        sink: &mut dyn Sink,
    ) -> Result<ExitCode> {
        Rtrace::map_timeline(self.text()?, input, sink)
    }
}

impl Dialect for Rtrace {
    fn name(&self) -> &'static str {
        "sp-rtrace text"
    }

    fn sniff(&self, input: &Input) -> bool {
        // Text, or a raw recording (`record mem --raw`), read as its text.
        if input.is_dir {
            return Recording::is_recording(&input.path);
        }
        tracekit_rtrace::sniff(&input.head) || tracekit_rtrace::recording::sniff(&input.head)
    }

    fn info(&self, inputs: &[Input], args: &info::Args) -> Result<ExitCode> {
        let mut out = output(None)?;
        // A recording: each of its traces.
        let mut images: Vec<Input> = Vec::new();
        let mut order: Vec<(usize, bool)> = Vec::new();
        for (k, input) in inputs.iter().enumerate() {
            match recording_of(input)? {
                Some(rec) => {
                    for i in &rec.images {
                        order.push((images.len(), true));
                        images.push(Input::open(&i.path)?);
                    }
                }
                None => order.push((k, false)),
            }
        }
        for (k, image) in order {
            let input = if image { &images[k] } else { &inputs[k] };
            let counts = tracekit_rtrace::summary::summarise(Rtrace::text(input)?)
                .map_err(|e| with_name(e, input))?;
            let name = input.display();
            if args.json {
                let v = serde_json::json!({
                    "file": name,
                    "format": "sp-rtrace",
                    "version": counts.header.get("version"),
                    "arch": counts.header.get("arch"),
                    "process": counts.header.get("process"),
                    "pid": counts.header.get("pid"),
                    "timestamp": counts.header.timestamp(),
                    "origin": counts.header.get("origin"),
                    "filter": counts.header.get("filter"),
                    "backtrace_depth": counts.header.get("backtrace depth"),
                    "allocations": counts.allocs,
                    "frees": counts.frees,
                    "frames": counts.frames,
                    "arguments": counts.args,
                    "maps": counts.maps,
                    "contexts": counts.contexts,
                    "resources": counts.resources,
                    "attachments": counts.attachments,
                    "comments": counts.comments,
                    "first_timestamp_ms": counts.first_ts,
                    "last_timestamp_ms": counts.last_ts,
                });
                serde_json::to_writer(&mut out, &v)?;
                writeln!(out)?;
            } else {
                let h = &counts.header;
                writeln!(
                    out,
                    "{name}: sp-rtrace text, version {}",
                    h.get("version").unwrap_or("?")
                )?;
                writeln!(
                    out,
                    "  process {} (pid {}), arch {}, recorded {}, origin {}",
                    h.get("process").unwrap_or("?"),
                    h.get("pid").unwrap_or("?"),
                    h.get("arch").unwrap_or("?"),
                    h.timestamp().unwrap_or("?"),
                    h.get("origin").unwrap_or("?")
                )?;
                if let Some(f) = h.get("filter") {
                    writeln!(out, "  post-processed: {f}")?;
                }
                writeln!(
                    out,
                    "  {} allocations, {} frees, {} frames, {} arguments",
                    counts.allocs, counts.frees, counts.frames, counts.args
                )?;
                writeln!(
                    out,
                    "  {} maps, {} contexts, {} resource types ({}), {} attachments, {} comments",
                    counts.maps,
                    counts.contexts,
                    counts.resources,
                    counts.resource_names.join(", "),
                    counts.attachments,
                    counts.comments
                )?;
                if let (Some(a), Some(b)) = (counts.first_ts, counts.last_ts) {
                    writeln!(
                        out,
                        "  time span {:.3} s (monotonic clock)",
                        (b as f64 - a as f64) / 1000.0
                    )?;
                }
            }
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }

    fn report(&self, inputs: &[Input], args: &crate::cmd::report::Args) -> Result<ExitCode> {
        let mut out = output(args.output.as_deref())?;
        let sym = symbolise(true, &[], None);
        for input in inputs {
            if let Some(rec) = recording_of(input)? {
                write_recording_report(&rec, args.top, &sym, args.json, &mut out)?;
                continue;
            }
            let rep = analyse(input, args.top, &sym)?;
            if args.json {
                serde_json::to_writer_pretty(&mut out, &rep.to_json(&input.display()))?;
                writeln!(out)?;
            } else {
                rep.write_text(&mut out, &input.display())?;
            }
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }

    fn diff(&self, base: &Input, new: &Input, args: &crate::cmd::report::Args) -> Result<ExitCode> {
        let mut out = output(args.output.as_deref())?;
        let base = &single_trace(Input::open(&base.path)?)?;
        let new = &single_trace(Input::open(&new.path)?)?;
        write_diff(
            base,
            new,
            args.top,
            &symbolise(true, &[], None),
            args.json,
            &mut out,
        )?;
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }

    fn timeline(
        &self,
        input: &Input,
        _args: &convert::Args,
        sink: &mut dyn Sink,
    ) -> Result<ExitCode> {
        if let Some(rec) = recording_of(input)? {
            return Rtrace::map_recording(&rec, input, sink);
        }
        Rtrace::map_timeline(Rtrace::text(input)?, input, sink)
    }

    fn tables(
        &self,
        input: &Input,
        args: &convert::Args,
        tables: &mut tracekit_parquet::Tables<'_>,
    ) -> Result<ExitCode> {
        if let Some(rec) = recording_of(input)? {
            // Every image's rows, one after another.
            for i in &rec.images {
                self.tables(&Input::open(&i.path)?, args, tables)?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        use tracekit_parquet::Table;
        let rows = tables.wants(Table::RtraceAllocations) || tables.wants(Table::RtraceBacktraces);
        let generic = Table::ALL
            .iter()
            .any(|t| t.is_generic() && tables.wants(*t));
        // A raw recording both passes read is decoded once.
        let decoded = if rows && generic && tracekit_rtrace::recording::sniff(&input.head) {
            Some(Decoded::decode(input)?)
        } else {
            None
        };
        let timeline = match &decoded {
            Some(d) => crate::formats::timeline_tables(d, input, args, tables)?,
            None => crate::formats::timeline_tables(self, input, args, tables)?,
        };
        if rows {
            let text = match &decoded {
                Some(d) => d.text()?,
                None => Rtrace::text(input)?,
            };
            let (_, w) =
                tracekit_parquet::dialects::rtrace(text, &input.display().to_string(), tables)
                    .map_err(|e| with_name(e, input))?;
            if timeline.is_none() {
                super::print_warnings(input.display(), &w);
            }
        }
        Ok(timeline.unwrap_or(ExitCode::SUCCESS))
    }

    fn targets(&self) -> &'static [Target] {
        TARGETS
    }
}

/// The formats sp-rtrace traces convert to (`convert --to`).
static TARGETS: &[Target] = &[
    Target {
        names: &["sp-rtrace", "rtrace"],
        about: "the sp-rtrace text, rewritten canonically (a raw recording decoded)",
        write: Writer::Own(to_rtrace),
    },
    Target {
        names: &["heaptrack"],
        about: "heaptrack's data file, zstd (name it .zst for heaptrack_print, heaptrack_gui)",
        write: Writer::Own(|input, args| to_heaptrack(input, args, true)),
    },
    Target {
        names: &["heaptrack-text"],
        about: "heaptrack's data file, uncompressed",
        write: Writer::Own(|input, args| to_heaptrack(input, args, false)),
    },
    Target {
        names: &["leaks-svg", "flamegraph"],
        about: "flame graph (SVG) of leaked bytes by backtrace",
        write: Writer::Own(|input, args| flame(input, args, Metric::Leaked)),
    },
    Target {
        names: &["flamegraph-bytes"],
        about: "flame graph of allocated bytes",
        write: Writer::Own(|input, args| flame(input, args, Metric::Allocated)),
    },
    Target {
        names: &["flamegraph-count"],
        about: "flame graph of allocation calls",
        write: Writer::Own(|input, args| flame(input, args, Metric::Allocations)),
    },
    Target {
        names: &["leaks-folded"],
        about: "folded stacks of leaked bytes",
        write: Writer::Own(|input, args| folded(input, args, Metric::Leaked)),
    },
    Target {
        names: &["folded-bytes"],
        about: "folded stacks of allocated bytes",
        write: Writer::Own(|input, args| folded(input, args, Metric::Allocated)),
    },
    Target {
        names: &["folded-count"],
        about: "folded stacks of allocation calls",
        write: Writer::Own(|input, args| folded(input, args, Metric::Allocations)),
    },
    Target {
        names: &["timeline-svg"],
        about: "memory in use over time (SVG)",
        write: Writer::Own(timeline_svg),
    },
];

/// A recording directory is converted one process image at a time, each
/// into its own output named after it (`image_outputs`).
fn each_image(
    input: &Input,
    args: &convert::Args,
    write: &dyn Fn(&Input, &convert::Args) -> Result<ExitCode>,
) -> Result<Option<ExitCode>> {
    let Some(rec) = recording_of(input)? else {
        return Ok(None);
    };
    let (ext, text) = match args.to.as_str() {
        "sp-rtrace" | "rtrace" => ("rtrace", true),
        "heaptrack" => ("heaptrack.zst", false),
        "heaptrack-text" => ("heaptrack", true),
        "leaks-folded" | "folded-bytes" | "folded-count" => ("folded", true),
        _ => ("svg", false),
    };
    let outs = image_outputs(&rec, args.output.as_deref(), ext, text)?;
    for (image, out) in rec.images.iter().zip(outs) {
        let mut a = args.clone();
        a.output = out;
        write(&Input::open(&image.path)?, &a)?;
    }
    Ok(Some(ExitCode::SUCCESS))
}

fn to_rtrace(input: &Input, args: &convert::Args) -> Result<ExitCode> {
    if let Some(code) = each_image(input, args, &to_rtrace)? {
        return Ok(code);
    }
    let out = output(args.output.as_deref())?;
    postproc::run(Rtrace::text(input)?, &Options::default(), out)
        .map_err(|e| with_name(e, input))?;
    Ok(ExitCode::SUCCESS)
}

fn to_heaptrack(input: &Input, args: &convert::Args, zstd: bool) -> Result<ExitCode> {
    if let Some(code) = each_image(input, args, &|i, a| to_heaptrack(i, a, zstd))? {
        return Ok(code);
    }
    let sym = symbolise(true, &[], None);
    let out = output(args.output.as_deref())?;
    let stats = if zstd {
        if let Some(p) = &args.output {
            if p.extension().is_none_or(|e| e != "zst") {
                eprintln!(
                    "tracekit: note: heaptrack_print and heaptrack_gui read a compressed file only when its name ends in .zst"
                );
            }
        }
        heaptrack::write_zst(Rtrace::text(input)?, out, &sym)
    } else {
        heaptrack::convert(Rtrace::text(input)?, out, &sym)
    }
    .map_err(|e| with_name(e, input))?;
    if stats.other_resources > 0 || stats.unmatched_frees > 0 {
        eprintln!(
            "tracekit: {}: not in the heaptrack file: {} call(s) of other resource types (heaptrack records memory only), {} free(s) of blocks never seen allocated",
            input.display(),
            stats.other_resources,
            stats.unmatched_frees
        );
    }
    super::print_warnings(input.display(), &stats.warnings);
    Ok(ExitCode::SUCCESS)
}

fn flame(input: &Input, args: &convert::Args, metric: Metric) -> Result<ExitCode> {
    if let Some(code) = each_image(input, args, &|i, a| flame(i, a, metric))? {
        return Ok(code);
    }
    let rep = analyse(input, 0, &symbolise(true, &[], None))?;
    let mut out = output(args.output.as_deref())?;
    rep.write_flamegraph(metric, &mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn folded(input: &Input, args: &convert::Args, metric: Metric) -> Result<ExitCode> {
    if let Some(code) = each_image(input, args, &|i, a| folded(i, a, metric))? {
        return Ok(code);
    }
    let rep = analyse(input, 0, &symbolise(true, &[], None))?;
    let mut out = output(args.output.as_deref())?;
    out.write_all(&rep.folded(metric))?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn timeline_svg(input: &Input, args: &convert::Args) -> Result<ExitCode> {
    if let Some(code) = each_image(input, args, &|i, a| timeline_svg(i, a))? {
        return Ok(code);
    }
    let rep = analyse(input, 0, &Symbolise::none())?;
    let mut out = output(args.output.as_deref())?;
    rep.write_timeline_svg(&mut out)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
mod tests {
    use super::*;

    /// `record mem` of a shell that runs a child (`ls`, which allocates)
    /// and exits with 3.
    fn record_args(modules: &str, output: Option<&Path>, raw: bool) -> RecordArgs {
        RecordArgs {
            modules: modules.into(),
            backtrace_depth: 4,
            output: output.map(Path::to_path_buf),
            raw,
            command: ["/bin/sh", "-c", "ls / >/dev/null; exit 3"]
                .iter()
                .map(Into::into)
                .collect(),
        }
    }

    /// The recording's traces, from its manifest (the command's first).
    fn traces(dir: &Path) -> Vec<PathBuf> {
        Recording::open(dir)
            .unwrap()
            .images
            .into_iter()
            .map(|i| i.path)
            .collect()
    }

    #[test]
    fn record_mem_writes_traces_and_keeps_the_exit_status() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("sh.mem");
        let code = record_mem(record_args("memory,file", Some(&out), false)).unwrap();
        assert_eq!(code, ExitCode::from(3));
        let all = traces(&out);
        let text = std::fs::read_to_string(&all[0]).unwrap();
        assert!(text.starts_with("version=2.0, arch="), "{text}");
        assert!(text.contains("<1> : memory (memory allocation in bytes)\n"));
        assert!(text.contains("<2> : fd (file descriptor)\n"));
        assert!(text.contains(") = 0x"));
        assert!(text.ends_with("## tracekit: the process exited with status 3\n"));
        // The child (fork + exec of ls, which allocates) got its own trace,
        // in the same directory; nothing was left beside it.
        assert!(all.len() >= 2, "{all:?}");
        assert!(all.iter().all(|p| p.parent() == Some(out.as_path())));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// --raw: every image's recording is renamed into the directory, with
    /// nothing else left there but the manifest, and each decodes.
    #[test]
    fn record_mem_raw_keeps_every_image() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("sh.raw");
        let args = record_args("memory", Some(&out), true);
        assert_eq!(record_mem(args).unwrap(), ExitCode::from(3));
        let names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names
                .iter()
                .all(|n| n.ends_with(".tkrt") || n == "recording.json"),
            "{names:?}"
        );
        let all = traces(&out);
        assert_eq!(all.len() + 1, names.len(), "{names:?}");
        assert!(all.len() >= 2, "{names:?}");
        for p in &all {
            let mut text = Vec::new();
            let (_, stats) = tracekit_rtrace::recording::decode_file(p, &mut text).unwrap();
            assert!(stats.allocs > 0, "{p:?}");
        }
        let mut text = Vec::new();
        let (info, _) = tracekit_rtrace::recording::decode_file(&all[0], &mut text).unwrap();
        assert_eq!(
            info.end,
            Some(tracekit_rtrace::recording::capture::ImageEnd::Exit(3))
        );
    }

    #[test]
    fn record_mem_rejects_unknown_modules() {
        let e = record_mem(record_args("memory,gpu", None, false))
            .unwrap_err()
            .to_string();
        assert!(e.contains("gpu"), "{e}");
    }
}
