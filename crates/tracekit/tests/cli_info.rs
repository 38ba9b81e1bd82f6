//! `info --json` has one shape for every dialect (`tracekit.info/1`,
//! docs/info-json.md): the shared facts under the same names at the top,
//! the dialect's own fields under `details`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(p)
}

#[test]
fn every_dialect_answers_with_the_same_fields() {
    let inputs = [
        ("examples/trace2/clone.event.jsonl", "trace2"),
        ("tests/corpus/xray/recursion/recursion.fdr.xray", "xray"),
        ("examples/build/make-nested.trace", "build"),
        (
            "tests/corpus/buildtrace/logs/expat-2.5.0/run1.ninja_log",
            "ninja",
        ),
        ("examples/rtrace/sample.rtrace", "rtrace"),
    ];
    let top: BTreeSet<&str> = [
        "schema",
        "input",
        "dialect",
        "format",
        "version",
        "producer",
        "events",
        "processes",
        "threads",
        "first_time",
        "last_time",
        "duration_s",
        "warnings",
        "lost",
        "details",
    ]
    .into();
    for (input, dialect) in inputs {
        let out = Command::new(env!("CARGO_BIN_EXE_tracekit"))
            .args(["info", "--json"])
            .arg(repo(input))
            .output()
            .expect("run tracekit");
        assert!(
            out.status.success(),
            "{input}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("utf8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1, "{input}: one object a line: {text}");
        let v: serde_json::Value = serde_json::from_str(lines[0]).expect("json");
        let obj = v.as_object().expect("an object");
        for k in obj.keys() {
            assert!(
                top.contains(k.as_str()),
                "{input}: unexpected top-level {k}"
            );
        }
        assert_eq!(v["schema"], "tracekit.info/1", "{input}");
        assert_eq!(v["dialect"], dialect, "{input}");
        assert!(v["input"]
            .as_str()
            .unwrap()
            .ends_with(input.rsplit('/').next().unwrap()));
        assert!(!v["format"].as_str().unwrap().is_empty(), "{input}");
        assert!(v["events"].as_u64().unwrap() > 0, "{input}: {v}");
        assert!(v["version"].is_string(), "{input}: {v}");
        assert!(v["details"].is_object(), "{input}");
        // Absent facts are left out, never null.
        assert!(obj.values().all(|x| !x.is_null()), "{input}: {v}");
    }
}
