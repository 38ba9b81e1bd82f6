//! kwinject build traces: `tracekit build spec`, `tracekit record build`,
//! and the dialect behind `info`/`report`/`convert` for build traces.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use tracekit_core::timeline::Sink;
use tracekit_kwinject::analysis::{self, Build};
use tracekit_kwinject::bear_config::BearConfig;
use tracekit_kwinject::cdb::{read_database, CdbBuilder, CdbOptions};
use tracekit_kwinject::env::{EnvBase, EnvFolder};
use tracekit_kwinject::kwspec::SpecBuilder;
use tracekit_kwinject::record::{self, Assembler, Method};
use tracekit_kwinject::trace::{Env, Process, Trace};

use crate::cmd::{convert, info, output, report};
use crate::formats::{Dialect, Target, Writer};
use crate::input::Input;

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

impl DbArgs {
    /// The options these arguments, the configuration file and the build's
    /// environment (`CC`, `CXX`, `FC`) give. The configuration's warnings
    /// are printed.
    pub fn options(&self, top_env: &Env) -> Result<CdbOptions> {
        let mut opts = CdbOptions {
            bear3: self.bear3,
            expand_response_files: self.expand_response_files,
            ..Default::default()
        };
        if let Some(path) = &self.config {
            let config = read_config(path)?;
            let cwd = std::env::current_dir()
                .context("the current directory")?
                .display()
                .to_string();
            config.apply(&mut opts, &cwd);
        }
        let cwd = std::env::current_dir()
            .context("the current directory")?
            .display()
            .to_string();
        let abs = |p: &PathBuf| tracekit_kwinject::cdb::absolute(&cwd, &p.display().to_string());
        opts.paths_to_include.extend(self.include.iter().map(abs));
        opts.paths_to_exclude.extend(self.exclude.iter().map(abs));
        opts.drop_flags.extend(self.drop_flags.iter().cloned());
        // Switches given here override the file.
        if self.all_sources {
            opts.existing_only = false;
        }
        if self.no_output_field {
            opts.with_output = false;
        }
        opts.add_environment_compilers(top_env);
        Ok(opts)
    }
}

fn read_config(path: &std::path::Path) -> Result<BearConfig> {
    let text =
        std::fs::read_to_string(path).map_err(|e| tracekit_core::Error::io(Some(path), e))?;
    let config =
        BearConfig::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    for w in &config.warnings {
        eprintln!("tracekit: {}: warning: {w}", path.display());
    }
    Ok(config)
}

/// Folds each record's environment and collects the database.
fn collect_db(
    processes: &[Process],
    top_env: &Env,
    mode: EnvBase,
    opts: CdbOptions,
    warnings: &mut tracekit_core::Warnings,
) -> (CdbBuilder, u64) {
    let mut folder = EnvFolder::new(top_env.clone(), mode);
    let mut b = CdbBuilder::new(opts);
    for p in processes {
        let env = folder.fold(p, warnings);
        b.add(p, &env);
    }
    (b, folder.unknown_parents())
}

/// Merges the old database (`--append`), filters, and writes `path`
/// through a temporary file beside it (as Bear does: a failed write leaves
/// the old database as it was, and the temporary file is removed).
pub fn write_db(b: &mut CdbBuilder, path: &std::path::Path, append: bool) -> Result<()> {
    let stdout = path.as_os_str() == "-";
    if append && !stdout && path.exists() {
        let f = std::fs::File::open(path).map_err(|e| tracekit_core::Error::io(Some(path), e))?;
        let old = read_database(std::io::BufReader::new(f))
            .map_err(|e| anyhow::anyhow!("{}:{e}", path.display()))?;
        b.append(old);
    }
    b.finish();
    if stdout {
        return b
            .write(output(None)?)
            .map_err(|e| tracekit_core::Error::io(None, e).into());
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let written = output(Some(&tmp)).and_then(|out| {
        b.write(out)
            .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", tmp.display()))
    });
    let renamed = written.and_then(|()| {
        std::fs::rename(&tmp, path).map_err(|e| {
            anyhow::anyhow!(
                "{}: cannot rename to {}: {e}",
                tmp.display(),
                path.display()
            )
        })
    });
    if renamed.is_err() {
        // Nothing half-written stays behind.
        let _ = std::fs::remove_file(&tmp);
    }
    renamed.with_context(|| {
        format!(
            "{}: the compilation database was not written",
            path.display()
        )
    })
}

/// Says what happened to the executions: always with `--json` (as JSON)
/// or `always`, else when the database is empty or short (Bear users ask).
pub fn print_db_stats(b: &CdbBuilder, json: bool, always: bool) {
    let s = &b.stats;
    if json {
        eprintln!(
            "{}",
            serde_json::json!({
                "execs": s.execs, "compiler_execs": s.compiler_execs,
                "no_compilation": s.no_compilation,
                "unreadable_arguments": s.unreadable_arguments,
                "excluded_compiler": s.excluded_compiler,
                "appended": s.appended, "entries": s.entries,
                "dropped_missing_source": s.dropped_missing_source,
                "dropped_by_path": s.dropped_by_path,
                "dropped_duplicate": s.dropped_duplicate,
                "missing_response_files": s.missing_response_files,
                "dropped_flags": s.dropped_flags,
            })
        );
    } else if always
        || s.entries == 0
        || s.dropped_missing_source > 0
        || s.missing_response_files > 0
        || s.unreadable_arguments > 0
    {
        let appended = if s.appended > 0 {
            format!(" and {} from the existing database", s.appended)
        } else {
            String::new()
        };
        eprintln!(
            "tracekit: {} entries from {} compiler runs among {} processes{appended}; dropped: {} \
             (source gone; --all-sources keeps them), {} by path filters, {} duplicates; \
             {} runs compile nothing, {} have an empty argument, {} excluded compilers; \
             {} response files not found",
            s.entries,
            s.compiler_execs,
            s.execs,
            s.dropped_missing_source,
            s.dropped_by_path,
            s.dropped_duplicate,
            s.no_compilation,
            s.unreadable_arguments,
            s.excluded_compiler,
            s.missing_response_files
        );
    }
}

pub fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Spec(args) => spec(args),
    }
}

fn read_trace(input: &Input) -> Result<Trace> {
    let reader = input.reader()?;
    let trace = Trace::read(reader).map_err(|e| e.in_file(&input.path))?;
    super::print_warnings(input.display(), &trace.warnings);
    Ok(trace)
}

/// 1 when process records could not be read or were never written (the
/// README's promise: everything readable is processed, and the loss shows
/// in the exit status).
fn lost_exit(lost: u64) -> ExitCode {
    if lost > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

pub fn usage(message: &str) -> Result<ExitCode> {
    eprintln!("tracekit: {message}");
    Ok(ExitCode::from(2))
}

fn spec(args: SpecArgs) -> Result<ExitCode> {
    let Some(trace_path) = &args.trace else {
        return super::buildlog::spec_from_log(&args);
    };
    let input = Input::open(trace_path)?;
    let trace = read_trace(&input)?;
    let mode = if args.env_diff_top_level {
        EnvBase::TopLevel
    } else {
        EnvBase::Parent
    };
    let mut warnings = tracekit_core::Warnings::default();
    let unknown_parents: u64;
    match args.format.as_str() {
        "json" | "compile_commands" => {
            let opts = args.db.options(&trace.env)?;
            let path = args
                .output
                .unwrap_or_else(|| PathBuf::from("compile_commands.json"));
            if args.db.append && path.as_os_str() == "-" {
                return usage("--append needs a file to merge with, not standard output");
            }
            let (mut b, unknown) =
                collect_db(&trace.processes, &trace.env, mode, opts, &mut warnings);
            unknown_parents = unknown;
            write_db(&mut b, &path, args.db.append)?;
            print_db_stats(&b, args.json, false);
        }
        "kwinject" => {
            if args.db.append || args.db.config.is_some() {
                return usage(
                    "--append and --config are for the compilation database (--format json)",
                );
            }
            let read = |p: &str| std::fs::read_to_string(p).ok();
            let mut folder = EnvFolder::new(trace.env.clone(), mode);
            let mut b = SpecBuilder::new(&read);
            for p in &trace.processes {
                let env = folder.fold(p, &mut warnings);
                b.add(p, &env);
            }
            for w in &b.warnings {
                eprintln!("tracekit: {}: warning: {w}", input.display());
            }
            let path = args.output.unwrap_or_else(|| PathBuf::from("kwinject.out"));
            let out = output(Some(&path))?;
            b.write(out)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            unknown_parents = folder.unknown_parents();
        }
        other => anyhow::bail!("unknown --format {other:?} (json, kwinject)"),
    }
    if unknown_parents > 0 {
        eprintln!(
            "tracekit: {}: warning: {unknown_parents} records name a parent that no earlier \
             record has; their environment folds from the top-level env",
            input.display(),
        );
    }
    super::print_warnings(input.display(), &warnings);
    Ok(ExitCode::SUCCESS)
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

pub fn record_build(args: RecordArgs) -> Result<ExitCode> {
    let method = match args.method.as_str() {
        "preload" => Method::Preload,
        "ptrace" => Method::Ptrace,
        m => return usage(&format!("unknown --method {m:?} (preload, ptrace)")),
    };
    let top_env = record::current_env();
    // The database settings are checked before the build runs.
    let wants_db = args.compile_db.is_some()
        || args.db.append
        || args.db.config.is_some()
        || args.db.all_sources
        || args.db.bear3
        || args.db.no_output_field
        || args.db.expand_response_files
        || !args.db.include.is_empty()
        || !args.db.exclude.is_empty()
        || !args.db.drop_flags.is_empty();
    let db = if wants_db {
        let path = args
            .compile_db
            .clone()
            .unwrap_or_else(|| PathBuf::from("compile_commands.json"));
        if args.db.append && path.as_os_str() == "-" {
            return usage("--append needs a file to merge with, not standard output");
        }
        Some((path, args.db.options(&top_env)?))
    } else {
        None
    };
    let mut warnings = tracekit_core::Warnings::default();
    let (exit, asm) = match method {
        Method::Ptrace => {
            let mut asm = Assembler::new(top_env, None);
            let exit = record::ptrace::record(&args.command, &mut asm)
                .context("recording the build with ptrace")?;
            (exit, asm)
        }
        Method::Preload => {
            let lib = match std::env::var_os("TRACEKIT_PRELOAD_LIB") {
                Some(p) => PathBuf::from(p),
                None => tracekit_preload::install(None).context("installing the preload shim")?,
            };
            let mut asm = Assembler::new(top_env, Some(lib.display().to_string()));
            let exit = record::preload::record(&args.command, &lib, &mut asm, &mut warnings)
                .context("recording the build with the preload shim")?;
            (exit, asm)
        }
    };
    // From here on the build is over: whatever fails is said, and the
    // exit status stays the build's.
    write_trace(&asm, &args.output);
    super::print_warnings("events", &warnings);
    if args.verbose {
        eprintln!(
            "tracekit: recorded {} processes into {} (build {})",
            asm.len(),
            args.output.display(),
            match exit {
                Some(tracekit_kwinject::trace::Exit::Code(c)) => format!("exit status {c}"),
                Some(tracekit_kwinject::trace::Exit::Signal(s)) => format!("killed by signal {s}"),
                None => "status unknown".into(),
            }
        );
    }
    if let Some((path, opts)) = db {
        let mut w = tracekit_core::Warnings::default();
        let (mut b, _) = collect_db(
            asm.processes(),
            asm.top_env(),
            EnvBase::Parent,
            opts,
            &mut w,
        );
        match write_db(&mut b, &path, args.db.append) {
            Ok(()) => print_db_stats(&b, false, args.verbose),
            Err(e) => eprintln!("tracekit: {e:#}"),
        }
    }
    // The process ends right after: freeing thousands of environments one
    // by one would only add to the build's wall time.
    std::mem::forget(asm);
    // Last: a build killed by a signal takes the recorder down the same way.
    let code = record::mirror_exit(exit).clamp(0, 255) as u8;
    Ok(ExitCode::from(code))
}

/// Writes the recorded trace to `path` (`-`: standard output). A failure
/// is reported with the path and the OS's reason and what is left of the
/// file (a trace marked truncated, or nothing); it never changes the exit
/// status, which is the build's.
fn write_trace(asm: &Assembler, path: &std::path::Path) {
    if path.as_os_str() == "-" {
        let written = output(None).and_then(|out| {
            let mut out = asm.write(out)?;
            out.flush()?;
            Ok(())
        });
        if let Err(e) = written {
            let quiet = e
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe);
            if !quiet {
                eprintln!("tracekit: standard output: cannot write the build trace: {e}");
            }
        }
        return;
    }
    let file = match tracekit_core::files::create(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!(
                "tracekit: {}: cannot create the build trace: {e}",
                path.display()
            );
            return;
        }
    };
    if let Err(f) = asm.write_file(path, &file) {
        eprintln!(
            "tracekit: {}: cannot write the build trace: {}; {}",
            path.display(),
            f.error,
            f.left
        );
    }
}

pub struct Kwinject;

impl Dialect for Kwinject {
    fn name(&self) -> &'static str {
        "kwinject build trace"
    }

    fn sniff(&self, input: &Input) -> bool {
        let head = &input.head;
        let start = head.iter().position(|b| !b.is_ascii_whitespace());
        let Some(start) = start else { return false };
        if head[start] != b'{' {
            return false;
        }
        let has = |needle: &[u8]| head.windows(needle.len()).any(|w| w == needle);
        has(b"\"version\"") && (has(b"\"env-diff\"") || has(b"\"work_dir\"") || has(b"\"workdir\""))
            || (has(b"\"id\"") && has(b"\"executable\"") && has(b"\"args\""))
    }

    fn info(&self, inputs: &[Input], args: &info::Args) -> Result<ExitCode> {
        let mut out = output(None)?;
        let mut lost = 0;
        for input in inputs {
            let t = read_trace(input)?;
            lost += t.lost();
            let b = Build::new(&t);
            let ids: std::collections::HashSet<i64> = t.processes.iter().map(|p| p.id).collect();
            let compiles = b.compile_units;
            let span = b.span().map(|(s, e)| e - s);
            if args.json {
                serde_json::to_writer(
                    &mut out,
                    &serde_json::json!({
                        "file": input.display(), "format": "kwinject",
                        "version": t.version, "creator": t.creator,
                        "env_variables": t.env.len(), "processes": t.processes.len(),
                        "distinct_ids": ids.len(), "compile_units": compiles,
                        "span_us": span, "warnings": t.warnings.total(),
                        "lost_records": t.lost(),
                        "truncated": t.truncated.as_ref().map(|x| serde_json::json!({
                            "records": x.records, "of": x.of, "reason": x.reason,
                        })),
                    }),
                )?;
                writeln!(out)?;
            } else {
                writeln!(out, "{}: kwinject build trace", input.display())?;
                writeln!(
                    out,
                    "  version:       {}",
                    t.version.map_or("-".into(), |v| v.to_string())
                )?;
                writeln!(
                    out,
                    "  creator:       {}",
                    t.creator.as_deref().unwrap_or("-")
                )?;
                writeln!(
                    out,
                    "  processes:     {} ({} distinct ids)",
                    t.processes.len(),
                    ids.len()
                )?;
                writeln!(out, "  compile units: {compiles}")?;
                writeln!(out, "  top-level env: {} variables", t.env.len())?;
                match span {
                    Some(us) => writeln!(out, "  time span:     {:.3} s", us as f64 / 1e6)?,
                    None => writeln!(out, "  time span:     unknown (no tracekit time keys)")?,
                }
                writeln!(out, "  warnings:      {}", t.warnings.total())?;
                if let Some(x) = &t.truncated {
                    writeln!(
                        out,
                        "  truncated:     the recorder kept {} of {} process records ({})",
                        x.records, x.of, x.reason
                    )?;
                }
            }
        }
        out.flush()?;
        Ok(lost_exit(lost))
    }

    fn report(&self, inputs: &[Input], args: &report::Args) -> Result<ExitCode> {
        let mut out = output(args.output.as_deref())?;
        let mut lost = 0;
        // Response files a link names are read where the build left them.
        let read = |p: &str| std::fs::read_to_string(p).ok();
        for input in inputs {
            let t = read_trace(input)?;
            lost += t.lost();
            let b = Build::with_files(&t, &read);
            if args.json {
                serde_json::to_writer_pretty(&mut out, &analysis::report_json(&b, args.top))?;
                writeln!(out)?;
            } else {
                if inputs.len() > 1 {
                    writeln!(out, "== {}", input.display())?;
                }
                analysis::report_text(&b, args.top, &mut out)?;
            }
        }
        out.flush()?;
        Ok(lost_exit(lost))
    }

    fn timeline(
        &self,
        input: &Input,
        _args: &convert::Args,
        sink: &mut dyn Sink,
    ) -> Result<ExitCode> {
        let t = read_trace(input)?;
        let b = Build::new(&t);
        let skipped =
            tracekit_kwinject::timeline::map_build(&b, &input.display().to_string(), sink)?;
        if skipped > 0 {
            eprintln!(
                "tracekit: {}: {skipped} processes have no times (tk_start_us) and are not on the timeline",
                input.display()
            );
        }
        Ok(ExitCode::SUCCESS)
    }

    fn tables(
        &self,
        input: &Input,
        args: &convert::Args,
        tables: &mut tracekit_parquet::Tables<'_>,
    ) -> Result<ExitCode> {
        let code = crate::formats::timeline_tables(self, input, args, tables)?;
        if tables.wants(tracekit_parquet::Table::BuildProcesses) {
            let t = read_trace(input)?;
            let b = Build::new(&t);
            tracekit_parquet::dialects::build_processes(&b, &input.display().to_string(), tables)?;
        }
        Ok(code.unwrap_or(ExitCode::SUCCESS))
    }

    fn targets(&self) -> &'static [Target] {
        TARGETS
    }
}

/// The formats kwinject build traces convert to (`convert --to`).
static TARGETS: &[Target] = &[Target {
    names: &["kwinject"],
    about: "the kwinject trace, rewritten (compile_commands.json: `tracekit build spec`)",
    write: Writer::Own(to_kwinject),
}];

fn to_kwinject(input: &Input, args: &convert::Args) -> Result<ExitCode> {
    let t = read_trace(input)?;
    let mut out = t.write(output(args.output.as_deref())?)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
