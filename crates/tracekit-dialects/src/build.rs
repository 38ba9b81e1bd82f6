//! kwinject build traces: the dialect behind `info`, `report`, `convert`,
//! `diff` and `sql`, and what `tracekit build spec` and `tracekit record
//! build` do.
use crate::options::DiffOptions;
use crate::options::{ConvertOptions, InfoOptions, ReportOptions};
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use tracekit_core::timeline::Sink;
use tracekit_kwinject::analysis::Build;
use tracekit_kwinject::bear_config::BearConfig;
use tracekit_kwinject::cdb::{read_database, CdbBuilder, CdbOptions};
use tracekit_kwinject::env::{EnvBase, EnvFolder};
use tracekit_kwinject::kwspec::SpecBuilder;
use tracekit_kwinject::record::{self, Assembler, Method};
use tracekit_kwinject::trace::{Env, Process, Trace};

use crate::input::Input;
use crate::out::output;
use crate::registry::{Dialect, Target, Writer};

#[derive(Debug, Clone)]
pub struct SpecOptions {
    /// The build trace (`-` reads standard input).
    pub trace: Option<PathBuf>,
    /// Read what a build printed instead of a trace (`-` reads standard
    /// input): `make -n`, `make V=1`, `ninja -t commands`, `ninja -v`,
    /// shell command lines, `strace -f` logs (docs/formats/build-logs.md).
    pub from_log: Option<PathBuf>,
    /// With --from-log: the directory the build ran in (make's or ninja's
    /// -C; default: the current directory).
    pub directory: Option<PathBuf>,
    /// Where to write (`-` is standard output). Default:
    /// compile_commands.json, or kwinject.out with --format kwinject.
    pub output: Option<PathBuf>,
    /// `json` (Clang compilation database) or `kwinject` (Klocwork build
    /// specification: `compile`/`link` records).
    pub format: String,
    pub db: DbOptions,
    /// The trace's env-diffs are against the top-level env (not against
    /// the parent process, which is what tracekit writes).
    pub env_diff_top_level: bool,
    /// Print what happened to the executions as JSON on standard error.
    pub json: bool,
}

/// How the compilation database is made (`build spec`, `record build`).
#[derive(Debug, Clone)]
pub struct DbOptions {
    /// Bear's configuration file (`bear --config`): Bear 3's JSON or Bear
    /// 4's YAML (`schema: "4.1"`): compilers to recognise (with flags to add
    /// and remove) or exclude, directories to include or exclude, existing
    /// sources only, duplicate key, path formats, `command` strings, no
    /// `output` field. See docs/formats/build-tools.md §4.1 and
    /// docs/formats/build-logs.md.
    pub config: Option<PathBuf>,
    /// Merge with the database already at the output path, as `bear
    /// --append` does: new entries first, then the old ones; sources that
    /// are gone are dropped, and an entry with the same file and output as
    /// a newer one (the duplicate key) is replaced.
    pub append: bool,
    /// Keep entries whose source file does not exist now (by default they
    /// are dropped, as Bear does: configure's conftest.c is gone).
    pub all_sources: bool,
    /// Behave exactly like Bear 3.1.1 where tracekit does better
    /// (`distcc -j N gcc ...` then gives no entry).
    pub bear3: bool,
    /// Leave out the `output` field.
    pub no_output_field: bool,
    /// Splice `@file` response files into `arguments` (Bear 3.1.1 keeps the
    /// token). The files are read now, relative to each compile's directory.
    pub expand_response_files: bool,
    /// Keep only sources under DIR (repeatable; any of them).
    pub include: Vec<PathBuf>,
    /// Leave out sources under DIR (repeatable; wins over --include).
    pub exclude: Vec<PathBuf>,
    /// Take FLAG out of every entry's arguments (repeatable): exact, or a
    /// prefix when it ends in `*`. E.g. --drop-flag=-mthumb
    /// --drop-flag='-march=*' for flags clangd rejects from a cross compiler.
    pub drop_flags: Vec<String>,
}

/// `tracekit record build`.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// Where to write the kwinject trace (`-` is standard output).
    pub output: PathBuf,
    /// `preload` or `ptrace`.
    pub method: String,
    /// Also write the compilation database (default file:
    /// compile_commands.json; `-` is standard output), as `bear -- CMD` does.
    pub compile_db: Option<PathBuf>,
    pub db: DbOptions,
    /// Print a summary on standard error when the build is over.
    pub verbose: bool,
    /// The build command and its arguments (after `--`).
    pub command: Vec<OsString>,
}

impl DbOptions {
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
    // Only a regular file is replaced through a temporary one: renaming
    // over `/dev/null`, a FIFO or a socket would put a regular file in its
    // place (as root, a broken /dev/null for the whole machine), and over
    // a symbolic link would replace the link instead of the file it names.
    let path = &match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            anyhow::bail!(
                "{}: is a directory, not a compilation database",
                path.display()
            )
        }
        Ok(meta) if !meta.is_file() => {
            return output(Some(path))
                .and_then(|out| {
                    b.write(out)
                        .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", path.display()))
                })
                .with_context(|| {
                    format!(
                        "{}: the compilation database was not written",
                        path.display()
                    )
                });
        }
        Ok(_) => std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
        Err(_) => path.to_path_buf(),
    };
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

pub fn read_trace(input: &Input) -> Result<Trace> {
    let reader = input.reader()?;
    let trace = Trace::read(reader).map_err(|e| e.in_file(&input.path))?;
    crate::out::print_warnings(input.display(), &trace.warnings);
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

/// `tracekit build spec`: a compilation database or a build
/// specification from a build trace (or, with `from_log`, a build log).
pub fn spec(args: SpecOptions) -> Result<ExitCode> {
    let Some(trace_path) = &args.trace else {
        return crate::buildlog::spec_from_log(&args);
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
    crate::out::print_warnings(input.display(), &warnings);
    Ok(ExitCode::SUCCESS)
}

pub fn record_build(args: RecordOptions) -> Result<ExitCode> {
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
    crate::out::print_warnings("events", &warnings);
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
    fn compare(
        &self,
        before: &Input,
        after: &Input,
        options: &DiffOptions,
    ) -> Result<(tracekit_report::Report, ExitCode)> {
        let tb = read_trace(before)?;
        let ta = read_trace(after)?;
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
            options.top,
        );
        let lost = tb.lost() + ta.lost();
        Ok((r, ExitCode::from(u8::from(lost > 0))))
    }
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

    fn info(&self, inputs: &[Input], args: &InfoOptions) -> Result<ExitCode> {
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
                crate::info::Info {
                    input: input.display(),
                    dialect: "build",
                    format: "kwinject build trace".into(),
                    version: t.version.map(|v| v.to_string()),
                    producer: t.creator.clone(),
                    events: Some(t.processes.len() as u64),
                    processes: Some(ids.len() as u64),
                    duration_s: span.map(|us| us as f64 / 1e6),
                    warnings: Some(t.warnings.total()),
                    lost: Some(t.lost()),
                    details: serde_json::json!({
                        "env_variables": t.env.len(),
                        "process_records": t.processes.len(),
                        "distinct_ids": ids.len(), "compile_units": compiles,
                        "span_us": span,
                        "truncated": t.truncated.as_ref().map(|x| serde_json::json!({
                            "records": x.records, "of": x.of, "reason": x.reason,
                        })),
                    }),
                    ..Default::default()
                }
                .write_line(&mut out)?;
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

    fn reports(
        &self,
        inputs: &[Input],
        args: &ReportOptions,
    ) -> Result<(Vec<tracekit_report::Report>, ExitCode)> {
        let mut lost = 0;
        let mut reports = Vec::with_capacity(inputs.len());
        // Response files a link names are read where the build left them.
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let opts = tracekit_kwinject::report::Options {
            top: args.top,
            heading: inputs.len() > 1,
            ..Default::default()
        };
        for input in inputs {
            let t = read_trace(input)?;
            lost += t.lost();
            let b = Build::with_files(&t, &read);
            reports.push(tracekit_kwinject::report::to_report(
                &b,
                &input.display().to_string(),
                &opts,
            ));
        }
        Ok((reports, lost_exit(lost)))
    }

    fn timeline(
        &self,
        input: &Input,
        _args: &ConvertOptions,
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
        Ok(lost_exit(t.lost()))
    }

    fn tables(
        &self,
        input: &Input,
        args: &ConvertOptions,
        tables: &mut tracekit_parquet::Tables<'_>,
    ) -> Result<ExitCode> {
        let code = crate::registry::timeline_tables(self, input, args, tables)?;
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

fn to_kwinject(input: &Input, args: &ConvertOptions) -> Result<ExitCode> {
    let t = read_trace(input)?;
    let mut out = t.write(output(args.output.as_deref())?)?;
    out.flush()?;
    Ok(lost_exit(t.lost()))
}
