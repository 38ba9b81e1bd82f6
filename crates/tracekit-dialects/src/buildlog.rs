//! `tracekit build spec --from-log`: a compilation database or a Klocwork
//! build specification from what a build printed (make -n, ninja -t
//! commands, ninja -v, shell lines, strace logs), by the same rules as
//! from a recorded trace.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;
use tracekit_kwinject::buildlog::{self, BuildLog};
use tracekit_kwinject::cdb::{resolve_on_path, CdbBuilder};
use tracekit_kwinject::kwspec::SpecBuilder;
use tracekit_kwinject::trace::Env;

use crate::build::{print_db_stats, usage, write_db, SpecOptions};
use crate::input::Input;
use crate::out::output;

/// An entry whose directory the log does not spell out.
struct Uncertain {
    line: usize,
    file: String,
    directory: String,
    how: String,
}

pub fn spec_from_log(args: &SpecOptions) -> Result<ExitCode> {
    let Some(path) = &args.from_log else {
        return usage("a build trace or --from-log LOG is needed");
    };
    let input = Input::open(path)?;
    let mut bytes = Vec::new();
    input
        .reader()?
        .read_to_end(&mut bytes)
        .map_err(|e| tracekit_core::Error::io(Some(&input.path), e))?;
    let text = String::from_utf8_lossy(&bytes);
    let cwd = std::env::current_dir().context("the current directory")?;
    let start = match &args.directory {
        Some(d) => cwd.join(d),
        None => cwd,
    };
    let start = tracekit_kwinject::cdb::absolute("/", &start.display().to_string());
    let log = buildlog::read(&text, &start);
    // A log carries no environment: the build's is taken to be this one
    // (as `bear` takes its own), for PATH lookups, CC/CXX and CPATH.
    let env: Env = std::env::vars().collect();
    let processes = log.processes(&env, &|name, e| resolve_on_path(name, e));
    let name = input.display();
    let mut uncertain: Vec<Uncertain> = Vec::new();
    match args.format.as_str() {
        "json" | "compile_commands" => {
            let mut opts = args.db.options(&env)?;
            // Response files are read where the log says they are (Bear
            // 3.1.1 keeps the token: --bear3).
            opts.expand_response_files = args.db.expand_response_files || !args.db.bear3;
            let path = args
                .output
                .clone()
                .unwrap_or_else(|| PathBuf::from("compile_commands.json"));
            if args.db.append && path.as_os_str() == "-" {
                return usage("--append needs a file to merge with, not standard output");
            }
            let mut b = CdbBuilder::new(opts);
            for (k, (p, e)) in processes.iter().enumerate() {
                let before = b.entries.len();
                b.add(p, e);
                let c = &log.commands[k];
                if !c.dir_source.is_certain() {
                    for entry in &b.entries[before..] {
                        uncertain.push(Uncertain {
                            line: c.line,
                            file: entry.file.clone(),
                            directory: entry.directory.clone(),
                            how: c.dir_source.describe(),
                        });
                    }
                }
            }
            write_db(&mut b, &path, args.db.append)?;
            if !args.json {
                print_db_stats(&b, false, false);
            }
            report(&name, &log, &uncertain, args.json.then_some(&b))?;
        }
        "kwinject" => {
            if args.db.append || args.db.config.is_some() {
                return usage(
                    "--append and --config are for the compilation database (--format json)",
                );
            }
            let read = |p: &str| std::fs::read_to_string(p).ok();
            let mut b = SpecBuilder::new(&read);
            for (k, (p, e)) in processes.iter().enumerate() {
                let records = b.add(p, e);
                let c = &log.commands[k];
                if !c.dir_source.is_certain() && !records.is_empty() {
                    uncertain.push(Uncertain {
                        line: c.line,
                        file: c.args.last().cloned().unwrap_or_default(),
                        directory: c.dir.clone(),
                        how: c.dir_source.describe(),
                    });
                }
            }
            for w in &b.warnings {
                eprintln!("tracekit: {name}: warning: {w}");
            }
            let path = args
                .output
                .clone()
                .unwrap_or_else(|| PathBuf::from("kwinject.out"));
            let out = output(Some(&path))?;
            b.write(out)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            report(&name, &log, &uncertain, None)?;
        }
        other => anyhow::bail!("unknown --format {other:?} (json, kwinject)"),
    }
    Ok(if log.unparsed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// What the log held and what it could not say, on standard error: as
/// text, or (with the database's figures) as one JSON object.
fn report(
    name: &str,
    log: &BuildLog,
    uncertain: &[Uncertain],
    json_with: Option<&CdbBuilder>,
) -> Result<()> {
    if let Some(b) = json_with {
        let s = &b.stats;
        let v = json!({
            "log": {
                "file": name,
                "format": log.format.as_str(),
                "lines": log.lines,
                "commands": log.commands.len(),
                "messages": log.messages,
                "failed_execs": log.failed_execs,
                "unparsed": log.unparsed.iter().map(|u| json!({
                    "line": u.line, "reason": u.reason, "text": u.text,
                })).collect::<Vec<_>>(),
                "uncertain_directories": uncertain.iter().map(|u| json!({
                    "line": u.line, "file": u.file, "directory": u.directory, "how": u.how,
                })).collect::<Vec<_>>(),
            },
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
        });
        eprintln!("{v}");
        return Ok(());
    }
    for u in &log.unparsed {
        eprintln!(
            "tracekit: {name}:{}: warning: not read ({}): {}",
            u.line, u.reason, u.text
        );
    }
    for u in uncertain {
        eprintln!(
            "tracekit: {name}:{}: warning: {} is compiled in {}, a directory {}",
            u.line, u.file, u.directory, u.how
        );
    }
    eprintln!(
        "tracekit: {name}: {} log ({} lines): {} commands, {} lines not read, {} entries with a \
         directory the log does not spell out",
        log.format.as_str(),
        log.lines,
        log.commands.len(),
        log.unparsed.len(),
        uncertain.len()
    );
    Ok(())
}
