//! kwinject build traces: the flags of `tracekit build spec` and `tracekit
//! record build` (the work and the dialect are `tracekit_dialects::build`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use tracekit_dialects::build;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Turn a build trace into a compilation database (compile_commands.json,
    /// as Bear writes it) or a Klocwork build specification.
    #[command(
        verbatim_doc_comment,
        after_help = "Examples:\n  tracekit record build -- make -j8\n  tracekit build spec build.trace -o compile_commands.json\n  make -n | tracekit build spec --from-log - -o compile_commands.json\n  tracekit build spec --from-log ninja-commands.txt -C build\n  tracekit build spec build.trace --append --config bear.json\n  tracekit build spec build.trace --format kwinject -o kwinject.out\n  tracekit build spec kwwrap.trace --all-sources --bear3 -o -\n\nCompilers are recognised as Bear 3.1.1 does (gcc, g++, cc, c++, clang, clang++,\nwith cross prefixes and version suffixes; through ccache and distcc). One entry per\nsource; preprocess-only (-E, -M, -MM) and query runs give none; dependency flags\n(-MD -MF ...) and link flags are dropped from `arguments`. Programs named by CC, CXX\nand FC in the build's environment (the trace's top-level env) are compilers too.\n\n--config reads Bear's configuration file (JSON): compilation.compilers_to_recognize\n(executable, flags_to_add, flags_to_remove), compilation.compilers_to_exclude,\noutput.content.include_only_existing_source, paths_to_include, paths_to_exclude,\nduplicate_filter_fields (all, file, file_output), output.format.command_as_array,\ndrop_output_field. Bear 4's YAML (schema 4.0/4.1): compilers (path, as, ignore),\nsources.directories (include/exclude, last match wins), duplicates.match_on,\nformat.paths (as-is, absolute, canonical, relative), format.entries. Relative\ndirectories are taken against the current directory.\n\n--from-log reads what a build printed: make -n / make V=1 / VERBOSE=1 (with make's\nEntering directory lines), ninja -t commands, ninja -v, shell lines (cd DIR && ...),\nstrace -f logs. Lines it cannot read and entries whose directory the log does not\nspell out are listed (exit status 1 when a line was not read)."
    )]
    Spec(SpecArgs),
}

#[derive(clap::Args, Debug)]
pub struct SpecArgs {
    /// The build trace (`-` reads standard input).
    #[arg(value_name = "TRACE", required_unless_present = "from_log")]
    pub trace: Option<PathBuf>,
    /// Read what a build printed instead of a trace (`-` reads standard
    /// input): `make -n`, `make V=1`, `ninja -t commands`, `ninja -v`,
    /// shell command lines, `strace -f` logs (docs/formats/build-logs.md).
    #[arg(long, value_name = "LOG", conflicts_with = "trace")]
    pub from_log: Option<PathBuf>,
    /// With --from-log: the directory the build ran in (make's or ninja's
    /// -C; default: the current directory).
    #[arg(
        short = 'C',
        long = "directory",
        value_name = "DIR",
        requires = "from_log"
    )]
    pub directory: Option<PathBuf>,
    /// Where to write (`-` is standard output). Default:
    /// compile_commands.json, or kwinject.out with --format kwinject.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// `json` (Clang compilation database) or `kwinject` (Klocwork build
    /// specification: `compile`/`link` records).
    #[arg(long, default_value = "json", value_name = "FORMAT")]
    pub format: String,
    #[command(flatten)]
    pub db: DbArgs,
    /// The trace's env-diffs are against the top-level env (not against
    /// the parent process, which is what tracekit writes).
    #[arg(long)]
    pub env_diff_top_level: bool,
    /// Print what happened to the executions as JSON on standard error.
    #[arg(long)]
    pub json: bool,
}

/// How the compilation database is made (`build spec`, `record build`).
#[derive(clap::Args, Debug)]
pub struct DbArgs {
    /// Bear's configuration file (`bear --config`): Bear 3's JSON or Bear
    /// 4's YAML (`schema: "4.1"`): compilers to recognise (with flags to add
    /// and remove) or exclude, directories to include or exclude, existing
    /// sources only, duplicate key, path formats, `command` strings, no
    /// `output` field. See docs/formats/build-tools.md §4.1 and
    /// docs/formats/build-logs.md.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Merge with the database already at the output path, as `bear
    /// --append` does: new entries first, then the old ones; sources that
    /// are gone are dropped, and an entry with the same file and output as
    /// a newer one (the duplicate key) is replaced.
    #[arg(long)]
    pub append: bool,
    /// Keep entries whose source file does not exist now (by default they
    /// are dropped, as Bear does: configure's conftest.c is gone).
    #[arg(long)]
    pub all_sources: bool,
    /// Behave exactly like Bear 3.1.1 where tracekit does better
    /// (`distcc -j N gcc ...` then gives no entry).
    #[arg(long)]
    pub bear3: bool,
    /// Leave out the `output` field.
    #[arg(long)]
    pub no_output_field: bool,
    /// Splice `@file` response files into `arguments` (Bear 3.1.1 keeps the
    /// token). The files are read now, relative to each compile's directory.
    #[arg(long)]
    pub expand_response_files: bool,
    /// Keep only sources under DIR (repeatable; any of them).
    #[arg(long = "include", value_name = "DIR")]
    pub include: Vec<PathBuf>,
    /// Leave out sources under DIR (repeatable; wins over --include).
    #[arg(long = "exclude", value_name = "DIR")]
    pub exclude: Vec<PathBuf>,
    /// Take FLAG out of every entry's arguments (repeatable): exact, or a
    /// prefix when it ends in `*`. E.g. --drop-flag=-mthumb
    /// --drop-flag='-march=*' for flags clangd rejects from a cross compiler.
    #[arg(long = "drop-flag", value_name = "FLAG", allow_hyphen_values = true)]
    pub drop_flags: Vec<String>,
}

/// `tracekit record build`.
#[derive(clap::Args, Debug)]
#[command(
    verbatim_doc_comment,
    after_help = "Examples:\n  tracekit record build -- make -j8\n  tracekit record build --compile-db -- make -j8    # and compile_commands.json\n  tracekit record build --compile-db --append -- make   # keeps files not rebuilt\n  tracekit record build --compile-db cdb.json --config bear.json -- ninja\n  tracekit record build -o gzip.trace -- sh -c './configure && make'\n  tracekit record build --method ptrace -o static.trace -- ./build.sh\n  tracekit build spec build.trace -o compile_commands.json\n  tracekit report build.trace\n\nMethods:\n  preload  (default) a small LD_PRELOAD library in every dynamically linked\n           process reports its exec, forks and reaped children; lowest cost.\n  ptrace   the recorder follows the build with ptrace (fork/exec events, no\n           syscall stops); also sees statically linked programs.\n\nThe build runs unchanged: same exit status (a fatal signal is re-raised), same\nstdout/stderr, same environment apart from LD_PRELOAD and TRACEKIT_PRELOAD_OUT\n(preload), which the trace leaves out.\n\nWith --compile-db (or --append, --config) the compilation database is written\nafter the build, by the rules of `tracekit build spec` (Bear 3.1.1's); programs\nnamed by CC, CXX and FC in this environment count as compilers, as with Bear.\nThe exit status is always the build's: a trace or database that cannot be written\n(a full disk) is reported with the path and the reason, a trace cut short is\nended with a `tk_truncated` marker (info and report warn about it) or removed, and\nno half-written database is left."
)]
pub struct RecordArgs {
    /// Where to write the kwinject trace (`-` is standard output).
    #[arg(short = 'o', long, default_value = "build.trace", value_name = "FILE")]
    pub output: PathBuf,
    /// `preload` or `ptrace`.
    #[arg(long, default_value = "preload", value_name = "METHOD")]
    pub method: String,
    /// Also write the compilation database (default file:
    /// compile_commands.json; `-` is standard output), as `bear -- CMD` does.
    #[arg(
        long,
        value_name = "FILE",
        num_args = 0..=1,
        default_missing_value = "compile_commands.json"
    )]
    pub compile_db: Option<PathBuf>,
    #[command(flatten)]
    pub db: DbArgs,
    /// Print a summary on standard error when the build is over.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// The build command and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    pub command: Vec<OsString>,
}

impl From<SpecArgs> for build::SpecOptions {
    fn from(a: SpecArgs) -> Self {
        build::SpecOptions {
            trace: a.trace,
            from_log: a.from_log,
            directory: a.directory,
            output: a.output,
            format: a.format,
            db: a.db.into(),
            env_diff_top_level: a.env_diff_top_level,
            json: a.json,
        }
    }
}

impl From<DbArgs> for build::DbOptions {
    fn from(a: DbArgs) -> Self {
        build::DbOptions {
            config: a.config,
            append: a.append,
            all_sources: a.all_sources,
            bear3: a.bear3,
            no_output_field: a.no_output_field,
            expand_response_files: a.expand_response_files,
            include: a.include,
            exclude: a.exclude,
            drop_flags: a.drop_flags,
        }
    }
}

impl From<RecordArgs> for build::RecordOptions {
    fn from(a: RecordArgs) -> Self {
        build::RecordOptions {
            output: a.output,
            method: a.method,
            compile_db: a.compile_db,
            db: a.db.into(),
            verbose: a.verbose,
            command: a.command,
        }
    }
}

pub fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Spec(args) => build::spec(args.into()),
    }
}

pub fn record_build(args: RecordArgs) -> Result<ExitCode> {
    build::record_build(args.into())
}
