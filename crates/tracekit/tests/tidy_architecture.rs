//! ARCHITECTURE.md's layering rules, checked against the dependencies
//! cargo reads from the manifests (`cargo metadata --no-deps`), as
//! rust-analyzer's tidy tests do: a rule that only lives in prose drifts.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A workspace package and its normal (not dev, not build) dependencies.
struct Package {
    name: String,
    /// Dependencies inside the workspace (declared with a path).
    internal: BTreeSet<String>,
    /// Dependencies from a registry.
    external: BTreeSet<String>,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn packages() -> Vec<Package> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(workspace_root().join("Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let mut packages = Vec::new();
    for p in meta["packages"].as_array().expect("packages") {
        let mut package = Package {
            name: p["name"].as_str().expect("name").to_string(),
            internal: BTreeSet::new(),
            external: BTreeSet::new(),
        };
        for d in p["dependencies"].as_array().expect("dependencies") {
            if !d["kind"].is_null() {
                continue; // dev- and build-dependencies do not ship
            }
            let name = d["name"].as_str().expect("dependency name").to_string();
            if d.get("path").is_some_and(|v| !v.is_null()) {
                package.internal.insert(name);
            } else {
                package.external.insert(name);
            }
        }
        packages.push(package);
    }
    assert!(
        packages.len() >= 10,
        "not the workspace: {}",
        packages.len()
    );
    packages
}

fn package<'a>(all: &'a [Package], name: &str) -> &'a Package {
    all.iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no package {name} in the workspace"))
}

/// The dialect crates: each reads, writes and analyses one dialect.
const DIALECTS: &[&str] = &[
    "tracekit-trace2",
    "tracekit-xray",
    "tracekit-kwinject",
    "tracekit-rtrace",
    "tracekit-posix",
];

/// The columnar and query engines: heavy, kept out of the light crates.
const HEAVY: &[&str] = &[
    "arrow",
    "arrow-array",
    "arrow-buffer",
    "arrow-schema",
    "arrow-ipc",
    "parquet",
    "datafusion",
    "tokio",
];

#[test]
fn core_depends_on_nothing_but_thiserror() {
    let all = packages();
    let core = package(&all, "tracekit-core");
    assert!(core.internal.is_empty(), "{:?}", core.internal);
    let allowed: BTreeSet<String> = ["thiserror".to_string()].into();
    assert!(core.external.is_subset(&allowed), "{:?}", core.external);
}

#[test]
fn the_report_model_depends_only_on_core_and_serde() {
    let all = packages();
    let report = package(&all, "tracekit-report");
    let internal: BTreeSet<String> = ["tracekit-core".to_string()].into();
    let external: BTreeSet<String> = ["serde".to_string(), "serde_json".to_string()].into();
    assert!(
        report.internal.is_subset(&internal),
        "{:?}",
        report.internal
    );
    assert!(
        report.external.is_subset(&external),
        "{:?}",
        report.external
    );
}

#[test]
fn dialect_crates_never_depend_on_sinks_engines_or_the_binary() {
    let all = packages();
    // A dialect may use the shared rooms (core, export, report), the POSIX
    // engine its recorders run on, and its own preload shim; never another
    // dialect, a sink crate, the SQL engine or the CLI.
    for name in DIALECTS {
        let p = package(&all, name);
        for dep in &p.internal {
            let shared = matches!(
                dep.as_str(),
                "tracekit-core" | "tracekit-export" | "tracekit-report" | "tracekit-posix"
            );
            let own_shim = dep.ends_with("-preload")
                && dep.trim_end_matches("-preload") == name.trim_end_matches("-preload");
            assert!(
                shared || own_shim,
                "{name} depends on {dep}: ARCHITECTURE.md keeps dialects apart from sinks, \
                 engines, the binary and each other"
            );
        }
        for heavy in HEAVY {
            assert!(!p.external.contains(*heavy), "{name} depends on {heavy}");
        }
    }
}

#[test]
fn light_crates_stay_light() {
    let all = packages();
    for name in ["tracekit-core", "tracekit-export", "tracekit-report"] {
        let p = package(&all, name);
        for heavy in HEAVY {
            assert!(!p.external.contains(*heavy), "{name} depends on {heavy}");
        }
    }
    // DataFusion lives in tracekit-sql alone (a default feature of the CLI).
    for p in &all {
        if p.name != "tracekit-sql" {
            assert!(
                !p.external.contains("datafusion"),
                "{} depends on datafusion",
                p.name
            );
        }
    }
    // The OTLP sink reads Trace2 (the receiver path) and nothing else.
    let otlp = package(&all, "tracekit-otlp");
    let allowed: BTreeSet<String> =
        ["tracekit-core".to_string(), "tracekit-trace2".to_string()].into();
    assert!(otlp.internal.is_subset(&allowed), "{:?}", otlp.internal);
}

#[test]
fn nothing_depends_on_the_binary() {
    let all = packages();
    for p in &all {
        assert!(
            !p.internal.contains("tracekit") && !p.internal.contains("xtask"),
            "{} depends on the CLI",
            p.name
        );
    }
}

#[test]
fn every_crate_has_its_section_in_architecture_md() {
    let all = packages();
    let text = std::fs::read_to_string(workspace_root().join("ARCHITECTURE.md"))
        .expect("read ARCHITECTURE.md");
    for p in &all {
        let heading = if p.name == "xtask" {
            "### `xtask`".to_string()
        } else {
            format!("### `crates/{}`", p.name)
        };
        assert!(
            text.lines().any(|l| l.trim_end() == heading),
            "ARCHITECTURE.md has no `{heading}` section for the package {}",
            p.name
        );
    }
}

/// The binary only parses flags into typed options and hands them to the
/// library: no dialect implements its interface here, and the crate stays
/// small (issue 27's bound: 2,500 lines).
#[test]
fn the_binary_holds_no_dialect_logic() {
    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("read src") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    rust_files(&workspace_root().join("crates/tracekit/src"), &mut files);
    let mut lines = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read");
        lines += text.lines().count();
        assert!(
            !text.contains("impl Dialect for") && !text.contains("Dialect for "),
            "{}: a dialect belongs in tracekit-dialects",
            f.display()
        );
    }
    assert!(
        lines < 2500,
        "crates/tracekit/src holds {lines} lines: move what is not flag parsing into tracekit-dialects"
    );
}

#[test]
fn the_dialect_registry_parses_no_command_line() {
    let all = packages();
    let p = package(&all, "tracekit-dialects");
    assert!(
        !p.external.contains("clap"),
        "tracekit-dialects depends on clap"
    );
    assert!(!p.internal.contains("tracekit"));
}
