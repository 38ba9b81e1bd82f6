//! sp-rtrace memory and file-descriptor traces and `.tkmem` recordings:
//! the dialect behind `info`, `report`, `convert`, `diff` and `sql`, and
//! the work of `tracekit record mem` and `tracekit rtrace
//! postproc|report|decode`, from typed options.

use crate::options::DiffOptions;
use crate::options::{ConvertOptions, InfoOptions, ReportOptions};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use tracekit_core::timeline::Sink;
use tracekit_rtrace::heaptrack;
use tracekit_rtrace::postproc::{self, CallAddress, Options, SortOrder};
use tracekit_rtrace::recording::capture::Format;
use tracekit_rtrace::recording::set::{ImageSource, RecordedImage, Recording};
use tracekit_rtrace::report::{self, Metric, Symbolise};
use tracekit_rtrace::ItemStream;

use crate::input::Input;
use crate::out::output;
use crate::registry::{Dialect, Target, Writer};

#[derive(Debug, Clone)]
pub struct DecodeOptions {
    /// The recording (`-`: standard input).
    pub input: PathBuf,
    /// Write the text here (default, or `-`: standard output).
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// What to record: memory (malloc family), file (descriptors and
    /// FILE streams), pages (anonymous mmap/munmap/mremap), comma-separated.
    pub modules: String,
    /// Return addresses kept per allocation (0 = none; default and most:
    /// 64, the whole stack but for deeper recursion).
    pub backtrace_depth: usize,
    /// The recording: a .tkmem file (default `tracekit-mem.<pid>.tkmem` in
    /// the current directory), or with --format text or raw a directory
    /// (default `tracekit-mem.<pid>`); `-`: standard output.
    pub output: Option<PathBuf>,
    /// What to write: tkmem (one compact file), text (a directory of
    /// sp-rtrace text traces), raw (a directory of raw recordings).
    pub format: Format,
    /// Record the running process PID instead of a command, until it
    /// exits or tracekit gets SIGINT (Ctrl-C), which leaves it running.
    pub pid: Option<i32>,
    /// A signal that turns recording on and off in each process it is sent
    /// to (`kill -USR2 PID`): SIGUSR2, USR2 or a number. While paused,
    /// allocations are not recorded (releases are). Give a signal the
    /// program does not use: the recorder installs its handler only if the
    /// signal has none when the process starts, and a handler the program
    /// installs later replaces it.
    pub toggle_signal: Option<i32>,
    /// Start with recording paused (needs --toggle-signal).
    pub paused: bool,
    /// Keep every heap block's address in the .tkmem file (else those
    /// freed within their events block are named by their number).
    pub addresses: bool,
    /// The command and its arguments.
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Clone)]
pub struct PostprocOptions {
    /// The text trace (`-` or nothing: standard input).
    pub input: Option<PathBuf>,
    /// The input file, sp-rtrace-postproc style (same as IN).
    pub input_file: Option<PathBuf>,
    /// Write here instead of standard output (`-` is standard output).
    pub output: Option<PathBuf>,
    /// Remove matched allocation/free pairs and all frees; adds a leak
    /// summary per resource type.
    pub filter_leaks: bool,
    /// Group calls with identical backtraces (sorted with --sort).
    pub compress: bool,
    /// Resolve backtrace addresses to `function() from module` through the
    /// trace's memory maps and the modules' ELF symbol tables.
    pub resolve: bool,
    /// Group order with --compress: size, size-asc (default), count,
    /// count-asc.
    pub sort: Option<String>,
    /// Keep calls whose context mask intersects MASK (hex); 0 keeps the
    /// calls made outside every context.
    pub context: Option<String>,
    /// Keep calls of these resource types (hex bit mask, as in the
    /// `<id>` registry lines).
    pub resource: Option<String>,
    /// Trim backtraces to N frames.
    pub backtrace_depth: Option<usize>,
    /// Keep only the calls whose indices are listed in FILE (one a line).
    pub include: Option<PathBuf>,
    /// Drop the calls whose indices are listed in FILE (ignored with
    /// --include).
    pub exclude: Option<PathBuf>,
    /// Keep calls whose backtrace passes through `<start>+<size>` (hex) of
    /// the module whose path contains `<target>`.
    pub call_address: Option<String>,
    /// Look modules up under this directory (cross resolving).
    pub root: Option<PathBuf>,
    /// Accepted for compatibility: output is always text.
    pub text: bool,
    /// Accepted for compatibility (sp-rtrace-postproc parses it but never
    /// implemented it): arguments are kept.
    pub remove_args: bool,
}

#[derive(Debug, Clone)]
pub struct MemReportOptions {
    /// The text trace (`-` reads standard input).
    pub input: PathBuf,
    /// Compare with this earlier recording of the same program: what grew
    /// from BASE to IN.
    pub diff: Option<PathBuf>,
    /// Print JSON instead of text.
    pub json: bool,
    /// Write the report here instead of standard output.
    pub output: Option<PathBuf>,
    /// How many places each section lists.
    pub top: usize,
    /// Write live bytes over time as an SVG plot.
    pub timeline_svg: Option<PathBuf>,
    /// Write a flame graph of leaked bytes (SVG).
    pub flame_svg: Option<PathBuf>,
    /// Write a flame graph of allocated bytes (SVG).
    pub flame_bytes_svg: Option<PathBuf>,
    /// Write a flame graph of calls to allocation functions (SVG).
    pub flame_count_svg: Option<PathBuf>,
    /// Look for separate debug files here (repeatable; default
    /// /usr/lib/debug, or $TRACEKIT_DEBUG_DIRS, colon-separated).
    pub debug_dirs: Vec<PathBuf>,
    /// Look modules up under this directory (a copy of the recorded
    /// system's files).
    pub root: Option<PathBuf>,
    /// Do not resolve addresses (faster; no module files needed).
    pub no_resolve: bool,
}

/// The recorder library: `$TRACEKIT_PRELOAD_LIB`, or the copy built into
/// this executable written to `dir`.
pub fn preload_library(dir: &Path) -> Result<PathBuf> {
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
pub fn record_mem(a: RecordOptions) -> Result<ExitCode> {
    for m in a.modules.split(',') {
        if m != "memory" && m != "file" && m != "pages" {
            bail!("--modules: unknown module {m} (memory, file, pages)");
        }
    }
    if a.format == Format::Raw && a.output.as_deref() == Some(Path::new("-")) {
        bail!("--format raw writes files: give -o a directory");
    }
    if a.format == Format::Tkmem
        && a.output.as_deref() == Some(Path::new("-"))
        && std::io::IsTerminal::is_terminal(&std::io::stdout())
    {
        bail!("-o -: a .tkmem recording is binary; send standard output to a file or a pipe (or use --format text)");
    }
    if a.backtrace_depth > tracekit_rtrace_preload::wire::MAX_DEPTH {
        bail!(
            "--backtrace-depth: at most {}",
            tracekit_rtrace_preload::wire::MAX_DEPTH
        );
    }
    if let Some(pid) = a.pid {
        return crate::rtrace_attach::record_attached(&a, pid);
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

/// What the shim is told to record: the modules, and the toggle signal
/// (`toggle=N`, `paused`) in the same variable.
fn modules_env(a: &RecordOptions) -> String {
    let mut m = a.modules.clone();
    if let Some(sig) = a.toggle_signal {
        m.push_str(&format!(",toggle={sig}"));
        if a.paused {
            m.push_str(",paused");
        }
    }
    m
}

/// Runs the command with the shim writing into a POSIX trace stream that
/// a reader thread splits into per-image files, then writes them as the
/// library's [`Outputs`] says (text traces, or with `--raw` the recordings).
///
/// [`Outputs`]: tracekit_rtrace::recording::capture::Outputs
fn record_into(preload: std::ffi::OsString, a: &RecordOptions) -> Result<ExitCode> {
    use tracekit_rtrace::recording::capture::{Capture, Outputs};
    let stdout = a.output.as_deref() == Some(Path::new("-"));
    let outputs = Outputs {
        path: a.output.clone().filter(|_| !stdout),
        format: a.format,
        stdout,
        transient_addresses: a.addresses,
        command: a
            .command
            .iter()
            .map(|c| c.to_string_lossy().into_owned())
            .collect(),
    };
    if let Some(dir) = &outputs.path {
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
        .envs(capture.env(&modules_env(a)))
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            // Nothing was recorded: no empty recording is left behind.
            let packed = capture.packed_path();
            drop(capture);
            if let Some(p) = packed {
                tracekit_core::files::remove_written_file(&p);
            } else if let Some(dir) = &outputs.path {
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
    write_recorded(recorded)?;
    use std::os::unix::process::ExitStatusExt;
    Ok(match (status.code(), status.signal()) {
        (Some(c), _) => ExitCode::from(c.clamp(0, 255) as u8),
        (None, Some(sig)) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        _ => ExitCode::from(1),
    })
}

/// Writes a finished recording's outputs and says on stderr what they
/// hold (and what was lost).
pub fn write_recorded(recorded: tracekit_rtrace::recording::capture::Recorded) -> Result<()> {
    use tracekit_rtrace::recording::capture::Written;
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
            warn_hidden_allocator(&info);
            if !quiet || stats.lost > 0 || stats.truncated_bytes > 0 {
                eprintln!(
                    "tracekit: {}: {}",
                    out.display(),
                    describe_image(&info, &stats)
                )
            }
        }
        Written::Packed(info, stats) => {
            warn_hidden_allocator(&info);
            if !quiet || stats.lost > 0 {
                let name = if out.as_os_str().is_empty() {
                    "<stdout>".to_string()
                } else {
                    out.display().to_string()
                };
                eprintln!(
                    "tracekit: {name}: pid {}: {}",
                    info.pid,
                    describe_image(&info, &stats)
                )
            }
        }
    });
    if let Err(e) = wrote {
        // Nothing recorded (a static program): no empty directory stays
        // (the scratch directory inside goes with `recorded`).
        let dir = recorded.path.clone();
        let packed = recorded.format == Format::Tkmem;
        drop(recorded);
        if let (Some(dir), false) = (dir, packed) {
            let _ = std::fs::remove_dir(dir);
        }
        return Err(e.into());
    }
    if let (Some(path), false) = (&recorded.path, quiet) {
        match recorded.packed_stats() {
            Some(w) => eprintln!(
                "tracekit: {}: the recording, {} process image(s), {} events in {} bytes (tracekit report {})",
                path.display(),
                recorded.images.len(),
                w.events,
                w.bytes,
                path.display()
            ),
            None => eprintln!(
                "tracekit: {}: the recording, {} process image(s) (tracekit report {})",
                path.display(),
                recorded.images.len(),
                path.display()
            ),
        }
    }
    Ok(())
}

/// The text traces of a recording: a raw recording's one, or each image
/// of a `.tkmem` file.
pub fn decode(a: DecodeOptions) -> Result<ExitCode> {
    let input = Input::open(&a.input)?;
    let quiet = crate::progress::quiet();
    if tracekit_rtrace::recording::sniff(&input.head) && !input.is_stdin() {
        let out = output(a.output.as_deref())?;
        let (info, stats) = tracekit_rtrace::recording::decode_file(&a.input, out)?;
        if !quiet || stats.lost > 0 || stats.truncated_bytes > 0 {
            eprintln!(
                "tracekit: {}: {}",
                a.input.display(),
                describe_image(&info, &stats)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some(rec) = recording_of(&input)? else {
        bail!(
            "{}: not a recording (a .tkmem file, or a raw recording of record mem --format raw)",
            input.display()
        );
    };
    let outs = image_outputs(&rec, a.output.as_deref(), "rtrace", true)?;
    for (image, out) in rec.images.iter().zip(outs) {
        let mut w = output(out.as_deref())?;
        copy_text(&mut *image.text()?, &mut *w, &image.name(), out.as_deref())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Copies a trace's text to `out` (`path`, or standard output): a failed
/// read names the trace, a failed write the output.
fn copy_text(
    text: &mut dyn BufRead,
    out: &mut dyn Write,
    name: &str,
    path: Option<&Path>,
) -> Result<()> {
    let path = path.filter(|p| p.as_os_str() != "-");
    loop {
        let buf = text
            .fill_buf()
            .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        out.write_all(buf)
            .map_err(|e| tracekit_core::Error::io(path, e))?;
        text.consume(n);
    }
    out.flush().map_err(|e| tracekit_core::Error::io(path, e))?;
    Ok(())
}

/// `executable (N allocations, M releases; how it ended, losses)`.
/// Says (even with -q) that an image's executable defines allocator
/// functions itself: those allocations are missing from the recording.
fn warn_hidden_allocator(info: &tracekit_rtrace::recording::RecordingInfo) {
    use tracekit_rtrace::recording::allocators;
    if info.modules & tracekit_rtrace_preload::wire::MODULE_HIDDEN_ALLOCATOR != 0 {
        let names = allocators::defined_entry_points(Path::new(&info.executable));
        eprintln!(
            "tracekit: warning: pid {}: {} defines {} itself (a statically linked allocator): LD_PRELOAD cannot see its calls to them, those allocations are missing from the recording",
            info.pid,
            info.executable,
            if names.is_empty() {
                "allocator functions".to_string()
            } else {
                names.join(", ")
            }
        );
    }
}

fn describe_image(
    info: &tracekit_rtrace::recording::RecordingInfo,
    stats: &tracekit_rtrace::recording::DecodeStats,
) -> String {
    format!(
        "{} ({} allocations, {} releases{}{}{})",
        info.executable,
        stats.allocs,
        stats.frees,
        match tracekit_rtrace::recording::describe_image_end(info) {
            Some(end) => format!("; {end}"),
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

pub fn postproc(a: PostprocOptions) -> Result<ExitCode> {
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
    let traces = match recording_of(&input)? {
        Some(rec) => {
            let outs = image_outputs(&rec, a.output.as_deref(), "rtrace", true)?;
            rec.images.into_iter().map(Trace::Image).zip(outs).collect()
        }
        None => vec![(Trace::Input(&input), a.output.clone())],
    };
    for (trace, out_path) in traces {
        let out = output(out_path.as_deref())?;
        let stats = postproc::run(trace.items()?, &opts, out).map_err(|e| trace.error(e))?;
        if !crate::progress::quiet() {
            crate::out::print_warnings(trace.name(), &stats.warnings);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One trace to read: an input named on the command line, or an image
/// of a recording.
enum Trace<'a> {
    Input(&'a Input),
    Image(RecordedImage),
}

impl Trace<'_> {
    /// What messages call it.
    fn name(&self) -> String {
        match self {
            Trace::Input(i) => i.display(),
            Trace::Image(i) => i.name(),
        }
    }

    /// Its items, what the analyses read.
    fn items(&self) -> Result<ItemStream<'static>> {
        match self {
            Trace::Input(i) => Rtrace::items(i),
            Trace::Image(i) => image_items(i),
        }
    }

    /// An error of reading it, with its name.
    fn error(&self, e: tracekit_core::Error) -> anyhow::Error {
        match self {
            Trace::Input(i) => with_name(e, i),
            Trace::Image(i) => match &i.source {
                ImageSource::File(p) => e.in_file(p).into(),
                ImageSource::Packed(..) => e.in_file(Path::new(&i.name())).into(),
            },
        }
    }

    /// Whether it is a recorder's recording (raw or `.tkmem`), whose text
    /// is the decoder's.
    fn is_recording(&self) -> bool {
        match self {
            Trace::Input(i) => tracekit_rtrace::recording::sniff(&i.head),
            Trace::Image(i) => match &i.source {
                ImageSource::Packed(..) => true,
                ImageSource::File(p) => {
                    let mut head = [0u8; 4];
                    std::fs::File::open(p)
                        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
                        .is_ok_and(|_| tracekit_rtrace::recording::sniff(&head))
                }
            },
        }
    }

    /// Its sp-rtrace text.
    fn text(&self) -> Result<Box<dyn BufRead>> {
        match self {
            Trace::Input(i) if tracekit_rtrace::recording::sniff(&i.head) && !i.is_stdin() => Ok(
                Box::new(tracekit_rtrace::recording::Decoder::open(&i.path)?),
            ),
            Trace::Input(i) => i.reader(),
            Trace::Image(i) => Ok(i.text()?),
        }
    }
}

/// An image's items, with a progress bar over its part of the file.
fn image_items(image: &RecordedImage) -> Result<ItemStream<'static>> {
    match &image.source {
        ImageSource::File(p) => Rtrace::items(&Input::open(p)?),
        ImageSource::Packed(file, k) => {
            let events = tracekit_rtrace::recording::Events::packed(file, *k)?;
            let progress = crate::progress::Progress::bytes(events.bytes(), &image.name());
            Ok(ItemStream(Box::new(
                events.on_progress(move |n| progress.inc(n)),
            )))
        }
    }
}

/// The recording `record mem` wrote, if `input` is one: its directory,
/// or its `.tkmem` file (from standard input: copied to a temporary file
/// first, which a reader of its blocks needs). Says where a `.tkmem` file
/// was cut short or damaged.
fn recording_of(input: &Input) -> Result<Option<Recording>> {
    if input.is_dir {
        return Ok(Some(Recording::open(&input.path)?));
    }
    if !tracekit_rtrace::recording::packed::sniff(&input.head) {
        return Ok(None);
    }
    let file = if input.is_stdin() {
        let mut tmp = tempfile::tempfile().context("cannot create a temporary file")?;
        std::io::copy(&mut input.reader()?, &mut tmp).context("<stdin>: cannot read")?;
        tracekit_rtrace::recording::packed::PackedFile::from_file(tmp)
            .map_err(|e| e.in_file(Path::new("<stdin>")))?
    } else {
        tracekit_rtrace::recording::packed::PackedFile::open(&input.path)?
    };
    if let Some(d) = &file.damage {
        let cut = match d
            .cut_events
            .and_then(|(k, n)| Some((file.images.get(k as usize)?, n)))
        {
            Some((image, n)) => format!(
                "; {n} events of pid {} in the block cut short",
                image.info.pid
            ),
            None => String::new(),
        };
        eprintln!(
            "tracekit: {}: warning: read up to byte offset {}: {}; the {} bytes after it are not read (a recording cut short: events missing before the last ones read show as lost{cut})",
            input.display(),
            d.offset,
            d.reason,
            d.bytes
        );
    } else if file.finish.is_none() {
        eprintln!(
            "tracekit: {}: warning: the recording was not finished (its recorder was stopped): what it holds is read",
            input.display()
        );
    }
    let mut rec = Recording::from_packed(&input.path, file);
    if let Some(part) = &input.part {
        // One image of it, `FILE#<pid>-<n>`.
        rec.images.retain(|i| format!("{}-{}", i.pid, i.n) == *part);
        if rec.images.is_empty() {
            bail!(
                "{}: no process image {part} in the recording (its images are named FILE#<pid>-<n>: tracekit info {})",
                input.display(),
                input.path.display()
            );
        }
    }
    Ok(Some(rec))
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
            rec.path.display()
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

fn analyse(trace: &Trace, top: usize, sym: &Symbolise) -> Result<report::Report> {
    report::analyse_with(trace.items()?, top, sym).map_err(|e| trace.error(e))
}

fn write_svg(path: &Path, f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let mut out = output(Some(path))?;
    f(&mut out).map_err(|e| tracekit_core::Error::io(Some(path), e))?;
    out.flush()
        .map_err(|e| tracekit_core::Error::io(Some(path), e))?;
    Ok(())
}

fn write_diff(
    base: &Trace,
    new: &Trace,
    top: usize,
    sym: &Symbolise,
    json: bool,
    out: &mut dyn Write,
) -> Result<()> {
    let a = analyse(base, usize::MAX, sym)?;
    let b = analyse(new, usize::MAX, sym)?;
    let d = report::diff(&a, &b, top);
    if json {
        serde_json::to_writer_pretty(&mut *out, &d.to_json(&base.name(), &new.name()))?;
        writeln!(out)?;
    } else {
        d.write_text(&mut *out, &base.name(), &new.name())?;
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
    let whole = recording_reports(rec, top, sym)?;
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
pub fn diff_report(before: &Input, after: &Input, top: usize) -> Result<tracekit_report::Report> {
    let sym = symbolise(true, &[], None);
    let (before, after) = (Input::open(&before.path)?, Input::open(&after.path)?);
    let before = single_trace(&before)?;
    let after = single_trace(&after)?;
    let a = analyse(&before, usize::MAX, &sym)?;
    let b = analyse(&after, usize::MAX, &sym)?;
    Ok(report::diff_report(
        &a,
        &b,
        &before.name(),
        &after.name(),
        top,
    ))
}

/// Every image of a recording analysed.
fn recording_reports<'a>(
    rec: &'a Recording,
    top: usize,
    sym: &Symbolise,
) -> Result<report::RecordingReport<'a>> {
    let mut reports = Vec::with_capacity(rec.images.len());
    for image in &rec.images {
        let trace = Trace::Image(image.clone());
        reports.push((trace.name(), analyse(&trace, top, sym)?));
    }
    Ok(report::RecordingReport {
        recording: rec,
        reports,
    })
}

/// The one trace of `input`: itself, or the only image of a recording
/// (a diff compares one process with one process).
fn single_trace(input: &Input) -> Result<Trace<'_>> {
    let Some(rec) = recording_of(input)? else {
        return Ok(Trace::Input(input));
    };
    match rec.images.as_slice() {
        [one] => Ok(Trace::Image(one.clone())),
        images => bail!(
            "{}: a recording of {} process images; --diff compares two traces: name one, e.g. {}",
            rec.path.display(),
            images.len(),
            images.first().map_or(String::new(), |i| i.name())
        ),
    }
}

pub fn report(a: MemReportOptions) -> Result<ExitCode> {
    let (input, name) = open_input(Some(&a.input))?;
    let sym = symbolise(!a.no_resolve, &a.debug_dirs, a.root.as_deref());
    let mut out = output(a.output.as_deref())?;
    if let Some(base) = &a.diff {
        let base = Input::open(base)?;
        let base = single_trace(&base)?;
        let input = single_trace(&input)?;
        write_diff(&base, &input, a.top, &sym, a.json, &mut out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(rec) = recording_of(&input)? {
        let plots = a.timeline_svg.is_some()
            || a.flame_svg.is_some()
            || a.flame_bytes_svg.is_some()
            || a.flame_count_svg.is_some();
        match rec.images.as_slice() {
            [one] if plots || input.part.is_some() => {
                // One process (a .tkmem file of one, or FILE#<pid>-<n>):
                // its report and plots.
                let trace = Trace::Image(one.clone());
                return report_one(&trace, &trace.name(), &a, &sym, &mut out);
            }
            _ if plots => bail!(
                "{}: the SVG plots are made per process: name one trace of the recording (tracekit convert {} --to flamegraph -o DIR makes them all)",
                rec.path.display(),
                rec.path.display()
            ),
            _ => {}
        }
        write_recording_report(&rec, a.top, &sym, a.json, &mut out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    report_one(&Trace::Input(&input), &name, &a, &sym, &mut out)
}

/// The report of one trace, and its SVG plots.
fn report_one(
    trace: &Trace,
    name: &str,
    a: &MemReportOptions,
    sym: &Symbolise,
    out: &mut Box<dyn Write>,
) -> Result<ExitCode> {
    let rep = analyse(trace, a.top, sym)?;
    if a.json {
        serde_json::to_writer_pretty(&mut *out, &rep.to_json(name))?;
        writeln!(out)?;
    } else {
        rep.write_text(&mut *out, name)?;
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
    /// The items of an input, what every reader here takes: a text trace
    /// through the assembler, a raw recording (`record mem --format raw`)
    /// decoded straight into items. Both show a progress bar over the
    /// file's size.
    fn items(input: &Input) -> Result<ItemStream<'static>> {
        if !tracekit_rtrace::recording::sniff(&input.head) {
            let text = input.reader()?;
            return Ok(ItemStream(Box::new(tracekit_rtrace::Assembler::new(
                tracekit_rtrace::Reader::new(text),
            ))));
        }
        if input.is_stdin() {
            bail!(
                "a raw recording (record mem --format raw) is read from a file, not standard input"
            );
        }
        let size = std::fs::metadata(&input.path).map_or(0, |m| m.len());
        let progress = crate::progress::Progress::bytes(size, &input.display());
        let events = tracekit_rtrace::recording::Events::open(&input.path)?
            .on_progress(move |n| progress.inc(n));
        Ok(ItemStream(Box::new(events)))
    }

    fn map_timeline(trace: &Trace, sink: &mut dyn Sink) -> Result<ExitCode> {
        let name = trace.name();
        let (stats, warnings) = tracekit_rtrace::timeline::map_trace(trace.items()?, &name, sink)
            .map_err(|e| trace.error(e))?;
        crate::out::print_warnings(&name, &warnings);
        if stats.untimed > 0 {
            eprintln!(
                "tracekit: {name}: {} calls have no timestamp: they count in what is in use but are not placed on the timeline",
                stats.untimed
            );
        }
        Ok(ExitCode::SUCCESS)
    }

    /// A recording's images in one timeline (a process track each; they
    /// share the recorder's monotonic clock).
    fn map_recording(rec: &Recording, input: &Input, sink: &mut dyn Sink) -> Result<ExitCode> {
        let traces = rec.images.iter().map(|i| {
            image_items(i)
                .map(|t| (t, i.name()))
                .map_err(|e| tracekit_core::Error::Other(format!("{e:#}")))
        });
        let per = tracekit_rtrace::timeline::map_traces(traces, &input.display(), sink)?;
        for (name, stats, warnings) in per {
            crate::out::print_warnings(&name, &warnings);
            if stats.untimed > 0 {
                eprintln!(
                    "tracekit: {name}: {} calls have no timestamp: they count in what is in use but are not placed on the timeline",
                    stats.untimed
                );
            }
        }
        Ok(ExitCode::SUCCESS)
    }

    /// What `info` says of one trace.
    fn info_one(trace: &Trace, json: bool, out: &mut dyn Write) -> Result<()> {
        let counts = match trace {
            // A text file: its lines counted as they are.
            Trace::Input(i) if !trace.is_recording() => {
                tracekit_rtrace::summary::summarise(i.reader()?).map_err(|e| trace.error(e))?
            }
            Trace::Image(RecordedImage {
                source: ImageSource::File(p),
                ..
            }) if !trace.is_recording() => {
                let f = std::fs::File::open(p).map_err(|e| tracekit_core::Error::io(Some(p), e))?;
                tracekit_rtrace::summary::summarise(std::io::BufReader::with_capacity(1 << 20, f))
                    .map_err(|e| trace.error(e))?
            }
            _ => tracekit_rtrace::summary::summarise_items(trace.items()?)
                .map_err(|e| trace.error(e))?,
        };
        let name = trace.name();
        if json {
            let details = serde_json::json!({
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
            let duration_s = match (counts.first_ts, counts.last_ts) {
                (Some(a), Some(b)) if b >= a => Some(f64::from(b - a) / 1e3),
                _ => None,
            };
            crate::info::Info {
                input: name.to_string(),
                dialect: "rtrace",
                format: "sp-rtrace text".into(),
                version: counts.header.get("version").map(str::to_string),
                producer: counts.header.get("origin").map(str::to_string),
                events: Some(counts.allocs + counts.frees),
                duration_s,
                details,
                ..Default::default()
            }
            .write_line(out)?;
            return Ok(());
        }
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
        Ok(())
    }

    /// What `info` says of a `.tkmem` file as a whole (before its images).
    fn info_packed(rec: &Recording, name: &str, json: bool, out: &mut dyn Write) -> Result<()> {
        let Some(f) = &rec.packed else {
            return Ok(());
        };
        let (ips, nodes) = f.dict_size();
        let events: u64 = f.images.iter().map(|i| i.events).sum();
        use tracekit_rtrace::recording::packed as p;
        let kind = |k: u8| f.bytes_by_kind[k as usize];
        if json {
            let details = serde_json::json!({
                "command": f.head.command,
                "pid": f.root_pid(),
                "origin": f.head.origin,
                "images": f.images.len(),
                "bytes": f.size,
                "blocks": f.blocks,
                "event_bytes": kind(p::KIND_EVENTS),
                "dictionary_bytes": kind(p::KIND_DICT),
                "map_bytes": kind(p::KIND_MAPS),
                "addresses": ips,
                "trace_nodes": nodes,
                "transient_addresses": f.head.transient_addresses,
                "finished": f.finish.is_some(),
                "damage": f.damage.as_ref().map(|d| serde_json::json!({
                    "offset": d.offset, "bytes": d.bytes, "reason": d.reason,
                })),
            });
            crate::info::Info {
                input: name.to_string(),
                dialect: "rtrace",
                format: "tracekit memory recording (.tkmem)".into(),
                version: Some(f.version.to_string()),
                producer: f.head.origin.clone(),
                events: Some(events),
                details,
                ..Default::default()
            }
            .write_line(out)?;
            return Ok(());
        }
        writeln!(
            out,
            "{name}: tracekit memory recording (.tkmem version {}), {} process image(s), {} events",
            f.version,
            f.images.len(),
            events
        )?;
        if !f.head.command.is_empty() {
            writeln!(out, "  command: {}", f.head.command.join(" "))?;
        }
        if !f.head.transient_addresses {
            writeln!(
                out,
                "  heap blocks freed soon after by their thread are named by number, without their address (record mem --addresses keeps them)"
            )?;
        }
        writeln!(
            out,
            "  {} bytes in {} blocks: events {}, dictionary {} ({} addresses, {} trace-tree nodes), maps {}; {:.2} bytes per event",
            f.size,
            f.blocks,
            kind(p::KIND_EVENTS),
            kind(p::KIND_DICT),
            ips,
            nodes,
            kind(p::KIND_MAPS),
            f.size as f64 / events.max(1) as f64
        )?;
        match (&f.damage, &f.finish) {
            (Some(d), _) => writeln!(
                out,
                "  cut short: read up to byte offset {} ({}), {} bytes not read",
                d.offset, d.reason, d.bytes
            )?,
            (None, None) => writeln!(out, "  not finished (its recorder was stopped)")?,
            _ => {}
        }
        Ok(())
    }
}

/// One image of a recording as a dialect, for [`Rtrace::tables`]' generic
/// tables (its own timeline); everything else is [`Rtrace`]'s.
struct OneImage(RecordedImage);

impl Dialect for OneImage {
    fn name(&self) -> &'static str {
        Rtrace.name()
    }
    fn sniff(&self, input: &Input) -> bool {
        Rtrace.sniff(input)
    }
    fn info(&self, inputs: &[Input], args: &InfoOptions) -> Result<ExitCode> {
        Rtrace.info(inputs, args)
    }
    fn reports(
        &self,
        inputs: &[Input],
        args: &ReportOptions,
    ) -> Result<(Vec<tracekit_report::Report>, ExitCode)> {
        Rtrace.reports(inputs, args)
    }
    fn targets(&self) -> &'static [Target] {
        Rtrace.targets()
    }
    fn timeline(
        &self,
        _input: &Input,
        _args: &ConvertOptions,
        sink: &mut dyn Sink,
    ) -> Result<ExitCode> {
        Rtrace::map_timeline(&Trace::Image(self.0.clone()), sink)
    }
}

impl Dialect for Rtrace {
    fn compare(
        &self,
        before: &Input,
        after: &Input,
        options: &DiffOptions,
    ) -> Result<(tracekit_report::Report, ExitCode)> {
        Ok((diff_report(before, after, options.top)?, ExitCode::SUCCESS))
    }
    fn name(&self) -> &'static str {
        "sp-rtrace text"
    }

    fn sniff(&self, input: &Input) -> bool {
        // Text, a raw recording (`record mem --format raw`) or a .tkmem
        // file, read as their items.
        if input.is_dir {
            return Recording::is_recording(&input.path);
        }
        tracekit_rtrace::sniff(&input.head)
            || tracekit_rtrace::recording::sniff(&input.head)
            || tracekit_rtrace::recording::packed::sniff(&input.head)
    }

    fn info(&self, inputs: &[Input], args: &InfoOptions) -> Result<ExitCode> {
        let mut out = output(None)?;
        for input in inputs {
            match recording_of(input)? {
                Some(rec) => {
                    Rtrace::info_packed(&rec, &input.display(), args.json, &mut out)?;
                    for i in &rec.images {
                        Rtrace::info_one(&Trace::Image(i.clone()), args.json, &mut out)?;
                    }
                }
                None => Rtrace::info_one(&Trace::Input(input), args.json, &mut out)?,
            }
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }

    /// A trace's report; a recording's report, then each image's (see
    /// `tracekit_rtrace::report::RecordingReport::to_reports`). The text
    /// says the reader's warnings, as it always did.
    fn reports(
        &self,
        inputs: &[Input],
        args: &ReportOptions,
    ) -> Result<(Vec<tracekit_report::Report>, ExitCode)> {
        let sym = symbolise(true, &[], None);
        let mut pages = Vec::new();
        for input in inputs {
            let trace = match recording_of(input)? {
                Some(rec) if input.part.is_none() => {
                    pages.extend(recording_reports(&rec, args.top, &sym)?.to_reports());
                    continue;
                }
                Some(rec) => Trace::Image(rec.images[0].clone()),
                None => Trace::Input(input),
            };
            pages.push(analyse(&trace, args.top, &sym)?.to_report(&trace.name()));
        }
        Ok((pages, ExitCode::SUCCESS))
    }

    fn diff(&self, base: &Input, new: &Input, args: &ReportOptions) -> Result<ExitCode> {
        let mut out = output(args.output.as_deref())?;
        let base = &single_trace(base)?;
        let new = &single_trace(new)?;
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
        _args: &ConvertOptions,
        sink: &mut dyn Sink,
    ) -> Result<ExitCode> {
        if let Some(rec) = recording_of(input)? {
            return Rtrace::map_recording(&rec, input, sink);
        }
        Rtrace::map_timeline(&Trace::Input(input), sink)
    }

    fn tables(
        &self,
        input: &Input,
        args: &ConvertOptions,
        tables: &mut tracekit_parquet::Tables<'_>,
    ) -> Result<ExitCode> {
        let traces = match recording_of(input)? {
            // Every image's rows, one after another.
            Some(rec) => rec.images.into_iter().map(Trace::Image).collect(),
            None => vec![Trace::Input(input)],
        };
        use tracekit_parquet::Table;
        let rows = tables.wants(Table::RtraceAllocations) || tables.wants(Table::RtraceBacktraces);
        let mut code = ExitCode::SUCCESS;
        for trace in traces {
            let timeline = match &trace {
                Trace::Image(i) => {
                    crate::registry::timeline_tables(&OneImage(i.clone()), input, args, tables)?
                }
                Trace::Input(_) => crate::registry::timeline_tables(self, input, args, tables)?,
            };
            if rows {
                let (_, w) =
                    tracekit_parquet::dialects::rtrace(trace.items()?, &trace.name(), tables)
                        .map_err(|e| trace.error(e))?;
                if timeline.is_none() {
                    crate::out::print_warnings(trace.name(), &w);
                }
            }
            if let Some(c) = timeline {
                code = c;
            }
        }
        Ok(code)
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

/// A recording (a directory or a `.tkmem` file) is converted one process
/// image at a time, each into its own output named after it
/// (`image_outputs`); any other input as itself.
fn each_image(
    input: &Input,
    args: &ConvertOptions,
    write: &dyn Fn(&Trace, &ConvertOptions) -> Result<()>,
) -> Result<ExitCode> {
    let Some(rec) = recording_of(input)? else {
        write(&Trace::Input(input), args)?;
        return Ok(ExitCode::SUCCESS);
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
        write(&Trace::Image(image.clone()), &a)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn to_rtrace(input: &Input, args: &ConvertOptions) -> Result<ExitCode> {
    each_image(input, args, &|trace, args| {
        let mut out = output(args.output.as_deref())?;
        if trace.is_recording() {
            // A recording's text, as `record mem --format text` writes it.
            copy_text(
                &mut *trace.text()?,
                &mut *out,
                &trace.name(),
                args.output.as_deref(),
            )?;
        } else {
            postproc::run(trace.items()?, &Options::default(), out).map_err(|e| trace.error(e))?;
        }
        Ok(())
    })
}

fn to_heaptrack(input: &Input, args: &ConvertOptions, zstd: bool) -> Result<ExitCode> {
    each_image(input, args, &|trace, args| {
        let sym = symbolise(true, &[], None);
        let out = output(args.output.as_deref())?;
        let name = trace.name();
        let stats = if zstd {
            if let Some(p) = &args.output {
                if p.extension().is_none_or(|e| e != "zst") {
                    eprintln!(
                        "tracekit: note: heaptrack_print and heaptrack_gui read a compressed file only when its name ends in .zst"
                    );
                }
            }
            heaptrack::write_zst(trace.items()?, out, &sym)
        } else {
            heaptrack::convert(trace.items()?, out, &sym)
        }
        .map_err(|e| trace.error(e))?;
        if stats.other_resources > 0 || stats.unmatched_frees > 0 {
            eprintln!(
                "tracekit: {name}: not in the heaptrack file: {} call(s) of other resource types (heaptrack records memory only), {} free(s) of blocks never seen allocated",
                stats.other_resources,
                stats.unmatched_frees
            );
        }
        crate::out::print_warnings(&name, &stats.warnings);
        Ok(())
    })
}

fn flame(input: &Input, args: &ConvertOptions, metric: Metric) -> Result<ExitCode> {
    each_image(input, args, &|trace, args| {
        let rep = analyse(trace, 0, &symbolise(true, &[], None))?;
        let mut out = output(args.output.as_deref())?;
        rep.write_flamegraph(metric, &mut out)?;
        out.flush()?;
        Ok(())
    })
}

fn folded(input: &Input, args: &ConvertOptions, metric: Metric) -> Result<ExitCode> {
    each_image(input, args, &|trace, args| {
        let rep = analyse(trace, 0, &symbolise(true, &[], None))?;
        let mut out = output(args.output.as_deref())?;
        out.write_all(&rep.folded(metric))?;
        out.flush()?;
        Ok(())
    })
}

fn timeline_svg(input: &Input, args: &ConvertOptions) -> Result<ExitCode> {
    each_image(input, args, &|trace, args| {
        let rep = analyse(trace, 0, &Symbolise::none())?;
        let mut out = output(args.output.as_deref())?;
        rep.write_timeline_svg(&mut out)?;
        out.flush()?;
        Ok(())
    })
}

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
mod tests {
    use super::*;

    /// `record mem` of a shell that runs a child (`ls`, which allocates)
    /// and exits with 3.
    fn record_args(modules: &str, output: Option<&Path>, format: Format) -> RecordOptions {
        RecordOptions {
            modules: modules.into(),
            backtrace_depth: 4,
            output: output.map(Path::to_path_buf),
            format,
            pid: None,
            toggle_signal: None,
            paused: false,
            addresses: false,
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
        let code = record_mem(record_args("memory,file", Some(&out), Format::Text)).unwrap();
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
        let args = record_args("memory", Some(&out), Format::Raw);
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
        let e = record_mem(record_args("memory,gpu", None, Format::Tkmem))
            .unwrap_err()
            .to_string();
        assert!(e.contains("gpu"), "{e}");
    }
}
