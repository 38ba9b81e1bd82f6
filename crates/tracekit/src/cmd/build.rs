//! kwinject build traces: `tracekit build spec`, `tracekit record build`,
//! and the dialect behind `info`/`report`/`convert` for build traces.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use tracekit_core::timeline::Sink;
use tracekit_kwinject::analysis::{self, Build};
use tracekit_kwinject::cdb::{CdbBuilder, CdbOptions};
use tracekit_kwinject::env::{EnvBase, EnvFolder};
use tracekit_kwinject::kwspec::SpecBuilder;
use tracekit_kwinject::record::{self, Assembler, Method};
use tracekit_kwinject::trace::Trace;

use crate::cmd::{convert, info, output, report};
use crate::formats::Dialect;
use crate::input::Input;

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Turn a build trace into a compilation database (compile_commands.json,
    /// as Bear writes it) or a Klocwork build specification.
    #[command(
        verbatim_doc_comment,
        after_help = "Examples:\n  tracekit record build -- make -j8\n  tracekit build spec build.trace -o compile_commands.json\n  tracekit build spec build.trace --format kwinject -o kwinject.out\n  tracekit build spec kwwrap.trace --all-sources --bear3 -o -\n\nCompilers are recognised as Bear 3.1.1 does (gcc, g++, cc, c++, clang, clang++,\nwith cross prefixes and version suffixes; through ccache and distcc). One entry per\nsource; preprocess-only (-E, -M, -MM) and query runs give none; dependency flags\n(-MD -MF ...) and link flags are dropped from `arguments`."
    )]
    Spec(SpecArgs),
}

#[derive(clap::Args, Debug)]
pub struct SpecArgs {
    /// The build trace (`-` reads standard input).
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Where to write (`-` is standard output). Default:
    /// compile_commands.json, or kwinject.out with --format kwinject.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// `json` (Clang compilation database) or `kwinject` (Klocwork build
    /// specification: `compile`/`link` records).
    #[arg(long, default_value = "json", value_name = "FORMAT")]
    pub format: String,
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
    /// The trace's env-diffs are against the top-level env (not against
    /// the parent process, which is what tracekit writes).
    #[arg(long)]
    pub env_diff_top_level: bool,
    /// Print what happened to the executions as JSON on standard error.
    #[arg(long)]
    pub json: bool,
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

fn spec(args: SpecArgs) -> Result<ExitCode> {
    let input = Input::open(&args.trace)?;
    let trace = read_trace(&input)?;
    let mode = if args.env_diff_top_level {
        EnvBase::TopLevel
    } else {
        EnvBase::Parent
    };
    let mut folder = EnvFolder::new(trace.env.clone(), mode);
    let mut warnings = tracekit_core::Warnings::default();
    match args.format.as_str() {
        "json" | "compile_commands" => {
            let mut b = CdbBuilder::new(CdbOptions {
                existing_only: !args.all_sources,
                bear3: args.bear3,
                with_output: !args.no_output_field,
                expand_response_files: args.expand_response_files,
            });
            for p in &trace.processes {
                let env = folder.fold(p, &mut warnings);
                b.add(p, &env);
            }
            let path = args
                .output
                .unwrap_or_else(|| PathBuf::from("compile_commands.json"));
            let out = output(Some(&path))?;
            b.write(out)
                .with_context(|| format!("{}: cannot write", path.display()))?;
            let s = &b.stats;
            if args.json {
                eprintln!(
                    "{}",
                    serde_json::json!({
                        "execs": s.execs, "compiler_execs": s.compiler_execs,
                        "no_compilation": s.no_compilation, "entries": s.entries,
                        "dropped_missing_source": s.dropped_missing_source,
                        "dropped_duplicate": s.dropped_duplicate,
                        "missing_response_files": s.missing_response_files,
                    })
                );
            } else if s.entries == 0 || s.dropped_missing_source > 0 || s.missing_response_files > 0
            {
                // Say why a database is empty or short (Bear users ask).
                eprintln!(
                    "tracekit: {} entries from {} compiler runs among {} processes; dropped: {} \
                     (source gone; --all-sources keeps them), {} duplicates, {} runs compile nothing; \
                     {} response files not found",
                    s.entries,
                    s.compiler_execs,
                    s.execs,
                    s.dropped_missing_source,
                    s.dropped_duplicate,
                    s.no_compilation,
                    s.missing_response_files
                );
            }
        }
        "kwinject" => {
            let read = |p: &str| std::fs::read_to_string(p).ok();
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
        }
        other => anyhow::bail!("unknown --format {other:?} (json, kwinject)"),
    }
    if folder.unknown_parents() > 0 {
        eprintln!(
            "tracekit: {}: warning: {} records name a parent that no earlier record has; \
             their environment folds from the top-level env",
            input.display(),
            folder.unknown_parents()
        );
    }
    super::print_warnings(input.display(), &warnings);
    Ok(ExitCode::SUCCESS)
}

/// `tracekit record build`.
#[derive(clap::Args, Debug)]
#[command(
    verbatim_doc_comment,
    after_help = "Examples:\n  tracekit record build -- make -j8\n  tracekit record build -o gzip.trace -- sh -c './configure && make'\n  tracekit record build --method ptrace -o static.trace -- ./build.sh\n  tracekit build spec build.trace -o compile_commands.json\n  tracekit report build.trace\n\nMethods:\n  preload  (default) a small LD_PRELOAD library in every dynamically linked\n           process reports its exec, forks and reaped children; lowest cost.\n  ptrace   the recorder follows the build with ptrace (fork/exec events, no\n           syscall stops); also sees statically linked programs.\n\nThe build runs unchanged: same exit status (a fatal signal is re-raised), same\nstdout/stderr, same environment apart from LD_PRELOAD and TRACEKIT_PRELOAD_OUT\n(preload), which the trace leaves out."
)]
pub struct RecordArgs {
    /// Where to write the kwinject trace (`-` is standard output).
    #[arg(short = 'o', long, default_value = "build.trace", value_name = "FILE")]
    pub output: PathBuf,
    /// `preload` or `ptrace`.
    #[arg(long, default_value = "preload", value_name = "METHOD")]
    pub method: String,
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
        m => anyhow::bail!("unknown --method {m:?} (preload, ptrace)"),
    };
    let top_env = record::current_env();
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
    let out = output(Some(&args.output))?;
    let mut out = asm
        .write(out)
        .with_context(|| format!("{}: cannot write", args.output.display()))?;
    out.flush()?;
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
    // The process ends right after: freeing thousands of environments one
    // by one would only add to the build's wall time.
    std::mem::forget(asm);
    let code = record::mirror_exit(exit);
    Ok(ExitCode::from(code.clamp(0, 255) as u8))
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
        for input in inputs {
            let t = read_trace(input)?;
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
            }
        }
        out.flush()?;
        Ok(ExitCode::SUCCESS)
    }

    fn report(&self, inputs: &[Input], args: &report::Args) -> Result<ExitCode> {
        let mut out = output(args.output.as_deref())?;
        for input in inputs {
            let t = read_trace(input)?;
            let b = Build::new(&t);
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
        Ok(ExitCode::SUCCESS)
    }

    fn timeline(
        &self,
        input: &Input,
        _args: &convert::Args,
        sink: &mut dyn Sink,
    ) -> Result<Option<ExitCode>> {
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
        Ok(Some(ExitCode::SUCCESS))
    }

    fn convert(&self, input: &Input, args: &convert::Args) -> Result<ExitCode> {
        let t = read_trace(input)?;
        let out = output(args.output.as_deref())?;
        match args.to.as_str() {
            "kwinject" => {
                let mut out = t.write(out)?;
                out.flush()?;
            }
            other => anyhow::bail!(
                "cannot convert a kwinject build trace to {other:?} (targets: chrome, perfetto, kwinject; \
                 for compile_commands.json use `tracekit build spec`)"
            ),
        }
        Ok(ExitCode::SUCCESS)
    }
}
