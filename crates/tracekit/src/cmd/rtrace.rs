//! sp-rtrace: the flags of `tracekit rtrace postproc|report|record|decode`
//! and `tracekit record mem` (the work and the dialect are
//! `tracekit_dialects::rtrace`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use tracekit_dialects::rtrace;
use tracekit_rtrace::recording::capture::Format;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Post-process a text trace like sp-rtrace-postproc: list leaks,
    /// compress identical backtraces, resolve addresses, filter.
    Postproc(PostprocArgs),
    /// Leak, peak and allocation-site report, with SVG plots.
    Report(ReportArgs),
    /// Run a command under the memory/fd recorder (the same as `tracekit
    /// record mem`).
    Record(RecordArgs),
    /// Turn a recording (`.tkmem`, or a raw recording of `record mem
    /// --format raw`) into the sp-rtrace text traces of its processes.
    Decode(DecodeArgs),
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
A recording holds each process image's events as the recorder received them
(a .tkmem file, docs/formats/tkmem.md; a raw recording of `record mem
--format raw`, docs/formats/rtrace.md §14): decoding restores the global
order of the threads' events and writes each process's sp-rtrace text,
byte for byte what `record mem --format text` writes. One process goes to
OUT (or standard output); several, to standard output in turn, or with -o
into the directory OUT, <pid>-<n>.rtrace each. The readers (report,
convert, postproc, sql) take recordings as they are: decoding is for
sp-rtrace's tools, and needs every address (`record mem --addresses`).

Examples:
  tracekit record mem --addresses -o app.tkmem -- ./app
  tracekit rtrace decode app.tkmem -o app.rtrace
  tracekit rtrace decode app.tkmem -o app.traces/     # every process
  tracekit rtrace decode app.raw/1234-0.tkrt")]
pub struct DecodeArgs {
    /// The recording (`-`: standard input).
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// Write the text here (default, or `-`: standard output).
    #[arg(short = 'o', long, value_name = "OUT")]
    pub output: Option<PathBuf>,
}

/// `record mem --format`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordFormat {
    Tkmem,
    Text,
    Raw,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Preloads tracekit's recorder (built into this executable, or the library
named by $TRACEKIT_PRELOAD_LIB) into CMD and its children, and writes one
file, OUT (default tracekit-mem.<pid>.tkmem), holding every process image
(fork children are new pids, exec starts image n+1 of the same pid): each
distinct backtrace and code address once, events as small deltas,
compressed as they are written (docs/formats/tkmem.md). The file is valid
up to its last written block if tracekit is killed. `tracekit report OUT`,
`tracekit convert OUT`, `tracekit sql OUT` and `tracekit rtrace postproc -l
OUT` read it as it is (a block its thread frees soon after is named by its
number; `--addresses` keeps its address, for `rtrace decode`'s sp-rtrace
text). `-o -` writes to standard output. The exit status is the command's.

--format text writes a directory instead, OUT (default tracekit-mem.<pid>):
one sp-rtrace text trace per process image (<pid>-<n>.rtrace, plain
sp-rtrace files for sp-rtrace's own tools) and recording.json listing them;
`-o -` then writes the text traces to standard output one after another.
--format raw keeps each image's events as the recorder received them
(<pid>-<n>.tkrt in the directory), like heaptrack -r.

Events travel through a POSIX trace stream in /dev/shm that tracekit reads
while CMD runs (a full stream makes CMD wait, nothing is dropped silently).
Backtraces are unwound from the programs' DWARF call-frame information
(.eh_frame), so code built without frame pointers (-O2, Debian packages)
gets complete stacks: whole stacks by default, up to 64 frames (heaptrack's
limit too). A process killed by a signal or a crash keeps every event it
recorded, and the recording says how each process ended (exit status or
signal).

-p PID records a running process instead (loaded into it with ptrace, as
heaptrack -p does through gdb) until it exits or tracekit gets Ctrl-C,
which stops recording and leaves the process running; tracekit then exits
0. Blocks allocated before are not in the recording: their frees are
counted apart (frees of blocks allocated before recording). Needs
permission to trace it (kernel.yama.ptrace_scope, CAP_SYS_PTRACE); a
process in a container or statically linked is refused with the reason.

Examples:
  tracekit record mem -o app.tkmem -- ./app --flag
  tracekit report app.tkmem
  tracekit record mem --modules memory,file --backtrace-depth 16 -- make check
  tracekit rtrace postproc app.tkmem -lcr            # leaks by backtrace, resolved
  tracekit record mem -o - -- ./app | tracekit report -
  tracekit record mem -p 4242 -o server.tkmem        # a running process; Ctrl-C detaches
  tracekit record mem --format text -o app.mem -- ./app   # sp-rtrace text traces
  tracekit record mem --toggle-signal SIGUSR2 --paused -- ./server &
  kill -USR2 <pid of ./server>     # recording on; again: off")]
pub struct RecordArgs {
    /// What to record: memory (malloc family), file (descriptors and
    /// FILE streams), pages (anonymous mmap/munmap/mremap), comma-separated.
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
    /// The recording: a .tkmem file (default tracekit-mem.<pid>.tkmem in
    /// the current directory), or with --format text or raw a directory
    /// (default tracekit-mem.<pid>); `-`: standard output.
    #[arg(short = 'o', long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// What to write: tkmem (one compact file), text (a directory of
    /// sp-rtrace text traces), raw (a directory of raw recordings).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "tkmem")]
    pub format: RecordFormat,
    /// The same as --format raw.
    #[arg(long, hide = true)]
    pub raw: bool,
    /// Record the running process PID instead of a command, until it
    /// exits or tracekit gets SIGINT (Ctrl-C), which leaves it running.
    #[arg(
        short = 'p',
        long = "pid",
        value_name = "PID",
        conflicts_with_all = ["command", "toggle_signal", "paused"]
    )]
    pub pid: Option<i32>,
    /// A signal that turns recording on and off in each process it is sent
    /// to (`kill -USR2 PID`): SIGUSR2, USR2 or a number. While paused,
    /// allocations are not recorded (releases are). Give a signal the
    /// program does not use: the recorder installs its handler only if the
    /// signal has none when the process starts, and a handler the program
    /// installs later replaces it.
    #[arg(long, value_name = "SIGNAL", value_parser = parse_signal)]
    pub toggle_signal: Option<i32>,
    /// Start with recording paused (needs --toggle-signal).
    #[arg(long, requires = "toggle_signal")]
    pub paused: bool,
    /// Keep every heap block's address (see below).
    #[arg(long)]
    pub addresses: bool,
    /// The command and its arguments.
    #[arg(
        required_unless_present = "pid",
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
        Command::Postproc(a) => rtrace::postproc(a.into()),
        Command::Report(a) => rtrace::report(a.into()),
        Command::Record(a) => record_mem(a),
        Command::Decode(a) => rtrace::decode(a.into()),
    }
}

impl RecordArgs {
    fn format(&self) -> Format {
        match (self.raw, self.format) {
            (true, _) | (_, RecordFormat::Raw) => Format::Raw,
            (_, RecordFormat::Text) => Format::Text,
            (_, RecordFormat::Tkmem) => Format::Tkmem,
        }
    }
}

/// `--toggle-signal`: a signal's name (`SIGUSR2`, `USR2`) or number.
fn parse_signal(s: &str) -> std::result::Result<i32, String> {
    const NAMES: &[(&str, i32)] = &[
        ("HUP", libc::SIGHUP),
        ("INT", libc::SIGINT),
        ("QUIT", libc::SIGQUIT),
        ("USR1", libc::SIGUSR1),
        ("USR2", libc::SIGUSR2),
        ("PIPE", libc::SIGPIPE),
        ("ALRM", libc::SIGALRM),
        ("TERM", libc::SIGTERM),
        ("WINCH", libc::SIGWINCH),
        ("URG", libc::SIGURG),
        ("PROF", libc::SIGPROF),
        ("VTALRM", libc::SIGVTALRM),
    ];
    let name = s.trim_start_matches("SIG");
    let n = match s.parse::<i32>() {
        Ok(n) => n,
        Err(_) => match NAMES.iter().find(|(k, _)| *k == name) {
            Some((_, n)) => *n,
            None => {
                let rt = name
                    .strip_prefix("RTMIN+")
                    .and_then(|k| k.parse::<i32>().ok());
                match rt {
                    Some(k) => libc::SIGRTMIN() + k,
                    None => return Err(format!("unknown signal {s} (e.g. SIGUSR2, USR2, 12)")),
                }
            }
        },
    };
    // SIGKILL and SIGSTOP cannot be caught.
    if n <= 0 || n > libc::SIGRTMAX() || n == libc::SIGKILL || n == libc::SIGSTOP {
        return Err(format!("{s}: not a signal that a handler can catch"));
    }
    Ok(n)
}

impl From<DecodeArgs> for rtrace::DecodeOptions {
    fn from(a: DecodeArgs) -> Self {
        rtrace::DecodeOptions {
            input: a.input,
            output: a.output,
        }
    }
}

impl From<PostprocArgs> for rtrace::PostprocOptions {
    fn from(a: PostprocArgs) -> Self {
        rtrace::PostprocOptions {
            input: a.input,
            input_file: a.input_file,
            output: a.output,
            filter_leaks: a.filter_leaks,
            compress: a.compress,
            resolve: a.resolve,
            sort: a.sort,
            context: a.context,
            resource: a.resource,
            backtrace_depth: a.backtrace_depth,
            include: a.include,
            exclude: a.exclude,
            call_address: a.call_address,
            root: a.root,
            text: a.text,
            remove_args: a.remove_args,
        }
    }
}

impl From<ReportArgs> for rtrace::MemReportOptions {
    fn from(a: ReportArgs) -> Self {
        rtrace::MemReportOptions {
            input: a.input,
            diff: a.diff,
            json: a.json,
            output: a.output,
            top: a.top,
            timeline_svg: a.timeline_svg,
            flame_svg: a.flame_svg,
            flame_bytes_svg: a.flame_bytes_svg,
            flame_count_svg: a.flame_count_svg,
            debug_dirs: a.debug_dirs,
            root: a.root,
            no_resolve: a.no_resolve,
        }
    }
}

impl From<RecordArgs> for rtrace::RecordOptions {
    fn from(a: RecordArgs) -> Self {
        let format = a.format();
        rtrace::RecordOptions {
            modules: a.modules,
            backtrace_depth: a.backtrace_depth,
            output: a.output,
            format,
            pid: a.pid,
            toggle_signal: a.toggle_signal,
            paused: a.paused,
            addresses: a.addresses,
            command: a.command,
        }
    }
}

/// `tracekit record mem`.
pub fn record_mem(a: RecordArgs) -> Result<ExitCode> {
    rtrace::record_mem(a.into())
}
