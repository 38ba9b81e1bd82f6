//! Our outputs against llvm-xray 14's golden outputs in the shared corpus.
//! Every golden file whose command succeeded (rc=0 in GOLDEN_COMMANDS.txt)
//! and that we implement is compared byte for byte (JSON as values).

use std::path::{Path, PathBuf};

use tracekit_xray::Trace;

mod common;

pub fn corpus() -> PathBuf {
    Path::new(common::CORPUS).to_path_buf()
}

/// (output file, command words) of every successful golden command.
pub fn golden_commands() -> Vec<(PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    for list in [
        "GOLDEN_COMMANDS.txt",
        "synthetic/GOLDEN_COMMANDS.txt",
        "examples/commands.txt",
    ] {
        let p = corpus().join(list);
        let text = std::fs::read_to_string(&p).expect("golden command list");
        let dir = p.parent().unwrap().to_path_buf();
        for line in text.lines() {
            let Some((file, rest)) = line.split_once(": rc=") else {
                continue;
            };
            let Some((rc, cmd)) = rest.split_once(" :: ") else {
                continue;
            };
            // Broken inputs: llvm-xray sometimes "succeeds" with empty output
            // (an FDR v6 header); we report them (see tests/broken.rs).
            if rc != "0" || file.starts_with("broken-") {
                continue;
            }
            let file_path = dir.join(file);
            let base = file_path.parent().unwrap().to_path_buf();
            let words = cmd.split_whitespace().map(|w| {
                if w.ends_with(".xray") || (!w.starts_with('-') && base.join(w).is_file()) {
                    base.join(w).display().to_string()
                } else {
                    w.to_string()
                }
            });
            out.push((file_path, words.collect()));
        }
    }
    out
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn fdr_dump_equals_llvm_xray() {
    let mut checked = 0;
    for (golden, words) in golden_commands() {
        if words.get(1).map(String::as_str) != Some("fdr-dump") {
            continue;
        }
        let trace_path = PathBuf::from(words.last().unwrap());
        let data = read(&trace_path);
        let trace = Trace::open(&data).unwrap_or_else(|e| panic!("{}: {e}", trace_path.display()));
        let mut out = Vec::new();
        let verify = words.iter().any(|w| w == "-verify" || w == "--verify");
        tracekit_xray::fdr_dump::write_fdr_dump(&trace, verify, &mut out)
            .unwrap_or_else(|e| panic!("{}: {e}", trace_path.display()));
        let want = read(&golden);
        assert!(
            out == want,
            "{}: fdr-dump differs from llvm-xray's",
            golden.display()
        );
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} fdr-dump goldens found");
}

/// Parsed llvm-xray flags of one golden command.
#[derive(Default, Debug)]
pub struct Flags {
    pub map: Option<String>,
    pub opts: std::collections::HashMap<String, String>,
    pub switches: Vec<String>,
    pub positional: Vec<String>,
}

pub fn parse_flags(words: &[String]) -> Flags {
    let mut f = Flags::default();
    let with_value = [
        "-m",
        "-sort",
        "-sortorder",
        "-top",
        "-format",
        "-f",
        "-output-format",
        "-stack-format",
        "-aggregation-type",
        "-e",
        "-c",
        "-v",
        "-b",
        "-instr_map",
        "--instr-map",
    ];
    let mut i = 2;
    while i < words.len() {
        let w = &words[i];
        if let Some((k, v)) = w.split_once('=') {
            if k.starts_with('-') {
                f.opts
                    .insert(k.trim_start_matches('-').to_string(), v.to_string());
                i += 1;
                continue;
            }
        }
        if with_value.contains(&w.as_str()) && i + 1 < words.len() {
            f.opts
                .insert(w.trim_start_matches('-').to_string(), words[i + 1].clone());
            i += 2;
            continue;
        }
        if w.starts_with('-') {
            f.switches.push(w.trim_start_matches('-').to_string());
        } else {
            f.positional.push(w.clone());
        }
        i += 1;
    }
    f.map = f
        .opts
        .get("m")
        .or(f.opts.get("instr_map"))
        .or(f.opts.get("instr-map"))
        .cloned();
    f
}

pub fn names_for(f: &Flags, base: &Path) -> tracekit_xray::names::FunctionNames {
    match &f.map {
        Some(m) => {
            let p = base.join(m);
            tracekit_xray::names::FunctionNames::load(&p, true).unwrap_or_else(|e| panic!("{e}"))
        }
        None => tracekit_xray::names::FunctionNames::none(),
    }
}

/// Runs the llvm-xray command of a golden file with our implementation.
/// None: a command we do not compare here.
pub fn run_ours(golden: &Path, words: &[String]) -> Option<Result<Vec<u8>, String>> {
    use tracekit_xray::commands;
    let f = parse_flags(words);
    let base = golden.parent().unwrap();
    let trace_path = PathBuf::from(f.positional.last()?);
    if words[1] == "extract" {
        let bin = base.join(&trace_path);
        let names = tracekit_xray::names::FunctionNames::load(
            &bin,
            !f.switches.iter().any(|s| s == "no-demangle"),
        )
        .unwrap();
        let symbolize = f.switches.iter().any(|s| s == "symbolize" || s == "s");
        let mut out = Vec::new();
        names
            .map()
            .unwrap()
            .write_yaml(&mut out, |id| {
                if symbolize {
                    names.symbol_or_number(id).to_string()
                } else {
                    String::new()
                }
            })
            .unwrap();
        return Some(Ok(out));
    }
    if words[1] == "graph-diff" {
        use tracekit_xray::graph::{DiffStyle, Stat};
        let first = f.positional.get(f.positional.len().checked_sub(2)?)?;
        let (a, b) = (read(Path::new(first)), read(&trace_path));
        let (ta, tb) = (Trace::open(&a).ok()?, Trace::open(&b).ok()?);
        let st = |k: &str| {
            f.opts
                .get(k)
                .map(|s| Stat::parse(s).unwrap())
                .unwrap_or(Stat::None)
        };
        let style = DiffStyle {
            edge_label: st("e"),
            edge_color: st("c"),
            vertex_label: st("v"),
            vertex_color: st("b"),
            truncate: 40,
        };
        let side = commands::DiffSide::default();
        let mut out = Vec::new();
        let res = commands::graph_diff([&ta, &tb], [side, side], &style, &mut out);
        return Some(res.map(|_| out).map_err(|e| e.to_string()));
    }
    let data = read(&trace_path);
    let trace = match Trace::open(&data) {
        Ok(t) => t,
        Err(e) => return Some(Err(e.to_string())),
    };
    let names = names_for(&f, base);
    let has = |s: &str| f.switches.iter().any(|x| x == s);
    let mut out = Vec::new();
    let res = match words[1].as_str() {
        "account" => {
            let args = commands::AccountArgs {
                keep_going: has("k") || has("keep-going"),
                deduce_sibling_calls: has("d") || has("deduce-sibling-calls"),
                recursive_calls_only: has("recursive-calls-only"),
                sort: f
                    .opts
                    .get("sort")
                    .map(|s| tracekit_xray::account::SortField::parse(s).unwrap())
                    .unwrap_or(tracekit_xray::account::SortField::FuncId),
                descending: f.opts.get("sortorder").map(|s| s == "dsc").unwrap_or(false),
                top: f.opts.get("top").map(|s| s.parse().unwrap()).unwrap_or(0),
                csv: f
                    .opts
                    .get("format")
                    .or(f.opts.get("f"))
                    .map(|s| s == "csv")
                    .unwrap_or(false),
            };
            commands::account(&trace, &names, &args, &mut out)
        }
        "stack" => {
            let args = commands::StackArgs {
                keep_going: has("k"),
                per_thread: has("per-thread-stacks"),
                aggregate_threads: has("aggregate-threads"),
                all_stacks: has("all-stacks") || has("all"),
                flame: f
                    .opts
                    .get("stack-format")
                    .map(|s| s == "flame")
                    .unwrap_or(false),
                count: f
                    .opts
                    .get("aggregation-type")
                    .map(|s| s == "count")
                    .unwrap_or(false),
            };
            commands::stack(std::slice::from_ref(&trace), &names, &args, &mut out)
        }
        "convert" => {
            let format = f
                .opts
                .get("output-format")
                .or(f.opts.get("f"))
                .cloned()
                .unwrap_or_default();
            let symbolize = has("symbolize") || has("y");
            let sort = f.opts.get("sort").map(|s| s != "false").unwrap_or(true);
            match format.as_str() {
                "yaml" => commands::convert_yaml(&trace, &names, symbolize, sort, &mut out),
                "trace_event" => {
                    commands::convert_trace_event(&trace, &names, symbolize, sort, &mut out)
                }
                _ => return None,
            }
        }
        "graph" => {
            use tracekit_xray::graph::Stat;
            let st = |k: &str, long: &str| {
                f.opts
                    .get(k)
                    .or(f.opts.get(long))
                    .map(|s| Stat::parse(s).unwrap())
                    .unwrap_or(Stat::None)
            };
            let args = commands::GraphArgs {
                keep_going: has("k"),
                deduce_sibling_calls: has("d"),
                edge_label: st("e", "edge-label"),
                edge_color: st("c", "color-edges"),
                vertex_label: st("v", "vertex-label"),
                vertex_color: st("b", "color-vertices"),
            };
            commands::graph(&trace, &names, &args, &mut out)
        }
        _ => return None,
    };
    Some(res.map(|_| out).map_err(|e| e.to_string()))
}

#[test]
fn llvm_xray_commands_equal_golden_outputs() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for (golden, words) in golden_commands() {
        if llvm_xray_is_wrong(&golden) {
            continue;
        }
        let Some(ours) = run_ours(&golden, &words) else {
            continue;
        };
        let want = read(&golden);
        let json = golden.to_string_lossy().ends_with(".json");
        match ours {
            Ok(out) if !json && out == want => checked += 1,
            Ok(out)
                if json
                    && serde_json::from_slice::<serde_json::Value>(&out).ok()
                        == serde_json::from_slice::<serde_json::Value>(&want).ok() =>
            {
                checked += 1
            }
            Ok(out) => {
                let bless = std::env::var_os("XRAY_DEBUG_DIR");
                if let Some(d) = bless {
                    let name = golden.file_name().unwrap();
                    std::fs::write(Path::new(&d).join(name), &out).unwrap();
                }
                failures.push(format!("{}: output differs", golden.display()))
            }
            Err(e) => failures.push(format!("{}: failed: {e}", golden.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{} ok, {} failed:\n{}",
        checked,
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 150, "only {checked} goldens compared");
    eprintln!("{checked} golden outputs identical");
}

/// Goldens where llvm-xray 14 is wrong (specs/xray-tool.md, "account"):
/// with -k on multi-threaded traces it silently drops every record whose
/// timestamp is older than the first record it processed.
fn llvm_xray_is_wrong(golden: &Path) -> bool {
    let name = golden.file_name().unwrap().to_string_lossy();
    (name.starts_with("mt.") && (name.contains(".account-k.") || name.contains(".account-sum.")))
        || name == "account-mt-k.csv"
}

/// For those goldens: every call is counted once (checked against an
/// independent count of entry records in the decoded trace), and we count
/// at least as many as llvm-xray kept.
#[test]
fn multithreaded_account_counts_every_call() {
    let mut checked = 0;
    for (golden, words) in golden_commands() {
        if !llvm_xray_is_wrong(&golden) {
            continue;
        }
        let ours = run_ours(&golden, &words).unwrap().unwrap();
        let text = String::from_utf8(ours).unwrap();
        let f = parse_flags(&words);
        let data = read(Path::new(f.positional.last().unwrap()));
        let trace = Trace::open(&data).unwrap();
        let mut entries: std::collections::HashMap<i32, u64> = Default::default();
        for r in trace.records() {
            let r = r.unwrap();
            if r.kind.is_entry() {
                *entries.entry(r.func_id).or_default() += 1;
            }
        }
        let csv = golden.to_string_lossy().ends_with(".csv");
        let parse = |t: &str| -> Vec<(i32, u64)> {
            t.lines()
                .skip(if csv { 1 } else { 2 })
                .map(|l| {
                    let v: Vec<&str> = if csv {
                        l.split(',').collect()
                    } else {
                        l.split_whitespace().collect()
                    };
                    (v[0].parse().unwrap(), v[1].parse().unwrap())
                })
                .collect()
        };
        let mine = parse(&text);
        assert_eq!(mine.len(), entries.len(), "{}", golden.display());
        for (id, count) in &mine {
            assert_eq!(entries[id], *count, "{}: function {id}", golden.display());
        }
        let theirs = parse(&String::from_utf8(read(&golden)).unwrap());
        for (id, count) in theirs {
            let ours = mine.iter().find(|m| m.0 == id).unwrap().1;
            assert!(ours >= count, "{}: function {id}", golden.display());
        }
        checked += 1;
    }
    assert_eq!(checked, 7);
}
