//! `tracekit build spec --from-log` on real build logs, each compared with
//! Bear 3.1.1's database of the same build (entries as a set: directory,
//! file, arguments, output); and `.ninja_log` reports of a real CMake +
//! Ninja build. The logs and Bear's databases are in
//! `tests/corpus/buildtrace/logs/` (README there says how they were made).
//!
//! The logs name `/home/dev/...`; each test recreates the compiled sources
//! (empty files) under a temporary directory, maps `/home/dev` onto it in
//! the log and in Bear's database, and runs tracekit there with
//! `PATH=/usr/bin:/bin`, as the builds ran (Bear wrote `/usr/bin/cc` and
//! `/usr/bin/gcc`, found along that PATH).

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/buildtrace/logs")
}

fn tracekit() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tracekit"));
    c.env_clear().env("PATH", "/usr/bin:/bin").env("LANG", "C");
    c
}

type Key = (String, String, Vec<String>, Option<String>);

fn keys(db: &Value) -> BTreeSet<Key> {
    db.as_array()
        .expect("a database is an array")
        .iter()
        .map(|e| {
            (
                e["directory"].as_str().unwrap().to_string(),
                e["file"].as_str().unwrap().to_string(),
                e["arguments"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap().to_string())
                    .collect(),
                e["output"].as_str().map(str::to_string),
            )
        })
        .collect()
}

/// The log's text (`.gz` files through `gzip -dc`).
fn log_text(rel: &str) -> String {
    let path = root().join(rel);
    if rel.ends_with(".gz") {
        let out = Command::new("gzip")
            .arg("-dc")
            .arg(&path)
            .output()
            .expect("gzip");
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    } else {
        std::fs::read_to_string(&path).unwrap()
    }
}

/// Runs `build spec --from-log -` on the mapped log in `dir` (relative to
/// the mapped /home/dev) and returns the database and the `--json` report.
fn from_log(
    home: &Path,
    log: &str,
    dir: &str,
    extra: &[&str],
) -> (Value, Value, std::process::ExitStatus) {
    let text = log.replace("/home/dev", home.to_str().unwrap());
    let mut child = tracekit()
        .current_dir(home.join(dir))
        .args(["build", "spec", "--from-log", "-", "-o", "-", "--json"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_end(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    let db: Value = serde_json::from_slice(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&stderr)));
    let report: Value = serde_json::from_slice(
        stderr
            .split(|&b| b == b'\n')
            .find(|l| l.starts_with(b"{"))
            .expect("the --json report"),
    )
    .unwrap();
    (db, report, status)
}

/// Bear's database with /home/dev mapped, and its sources created.
fn bear_db(home: &Path, rel: &str) -> Value {
    let text = std::fs::read_to_string(root().join(rel))
        .unwrap()
        .replace("/home/dev", home.to_str().unwrap());
    let db: Value = serde_json::from_str(&text).unwrap();
    for e in db.as_array().unwrap() {
        let f = Path::new(e["file"].as_str().unwrap());
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, "").unwrap();
    }
    db
}

/// The log gives Bear's entries exactly, with nothing left unread and no
/// directory taken on trust.
fn check(log: &str, bear: &str, dir: &str, extra: &[&str]) -> Value {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home-dev");
    let want = bear_db(&home, bear);
    std::fs::create_dir_all(home.join(dir)).unwrap();
    let (got, report, status) = from_log(&home, &log_text(log), dir, extra);
    assert!(status.success(), "{log}: {report}");
    let (g, w) = (keys(&got), keys(&want));
    assert_eq!(
        g.difference(&w).collect::<Vec<_>>(),
        w.difference(&g).collect::<Vec<_>>(),
        "{log}: tracekit's entries (left) that Bear lacks, and Bear's (right) that tracekit lacks"
    );
    assert!(!w.is_empty());
    assert_eq!(report["log"]["unparsed"], Value::Array(vec![]), "{log}");
    assert_eq!(
        report["log"]["uncertain_directories"],
        Value::Array(vec![]),
        "{log}"
    );
    report
}

#[test]
fn hiredis_make_logs_equal_bears_database() {
    let bear = "hiredis-0.14.1/bear-3.1.1.compile_commands.json";
    for log in ["make-n.log", "make-Bn.log", "make-j2.log"] {
        let r = check(
            &format!("hiredis-0.14.1/{log}"),
            bear,
            "hiredis-0.14.1",
            &[],
        );
        assert_eq!(r["entries"], 7, "{log}");
    }
    let r = check(
        "hiredis-0.14.1/strace-make-j2.log",
        bear,
        "hiredis-0.14.1",
        &[],
    );
    assert_eq!(r["log"]["format"], "strace");
}

#[test]
fn expat_ninja_and_cmake_make_logs_equal_bears_database() {
    let bear = "expat-2.5.0/bear-3.1.1.ninja.compile_commands.json";
    for log in ["ninja-t-commands.log", "ninja-v-j2.log"] {
        let r = check(
            &format!("expat-2.5.0/{log}"),
            bear,
            "expat-2.5.0/build",
            &[],
        );
        assert_eq!(r["entries"], 7, "{log}");
    }
    // CMake's Makefile generator: `cd DIR && /usr/bin/cc ...` lines,
    // make[N]: Entering directory lines, progress lines.
    let r = check(
        "expat-2.5.0/make-VERBOSE1.log",
        "expat-2.5.0/bear-3.1.1.make.compile_commands.json",
        "expat-2.5.0/build-make",
        &[],
    );
    assert_eq!(r["log"]["format"], "make");
}

/// gzip's recursive automake build: directories from make's Entering
/// lines (make -n, make V=1) and from chdir and clone (strace); automake's
/// `` `test -f 'x.c' || echo './'`x.c `` evaluated as the shell did.
#[test]
fn gzip_recursive_make_logs_equal_bears_database() {
    let bear = "../gzip-1.12/compile_commands.json";
    for log in ["make-n.log.gz", "make-V1.log.gz", "strace-make-j2.log.gz"] {
        let r = check(&format!("gzip-1.12/{log}"), bear, "src/gzip-1.12", &[]);
        assert_eq!(r["entries"], 64, "{log}");
    }
}

/// A directory the log does not spell out is said per entry; a line that
/// cannot be read is listed by number and the exit status is 1.
#[test]
fn what_a_log_cannot_know_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home-dev");
    for f in ["w/lib/a.c", "w/b.c"] {
        std::fs::create_dir_all(home.join(f).parent().unwrap()).unwrap();
        std::fs::write(home.join(f), "").unwrap();
    }
    let log = "make --no-print-directory -C lib\ncc -c a.c\nprintf 'unclosed\ncd .. && cc -c b.c\n";
    let (db, report, status) = from_log(&home, log, "w", &[]);
    assert_eq!(status.code(), Some(1));
    assert_eq!(db.as_array().unwrap().len(), 2);
    let u = &report["log"]["uncertain_directories"];
    assert_eq!(u.as_array().unwrap().len(), 2, "{report}");
    assert_eq!(u[0]["line"], 2);
    assert!(u[0]["how"].as_str().unwrap().contains("line 1"), "{u}");
    assert_eq!(report["log"]["unparsed"][0]["line"], 3);
}

fn make_available() -> bool {
    let ok = Command::new("make")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
        && Command::new("cc")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var_os("CI").is_none(), "make and cc are needed");
    }
    ok
}

/// A small recursive Makefile project built here: the database from its
/// `make -n` equals the one `record build` writes while make really runs
/// (the recorder's database equals Bear's, `bear_cases.rs`), and Bear's
/// own when Bear is installed.
#[test]
fn live_make_n_equals_the_recorded_build() {
    if !make_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("proj");
    std::fs::create_dir_all(p.join("lib")).unwrap();
    std::fs::create_dir_all(p.join("tools")).unwrap();
    let files = [
        ("Makefile", "all: libs app tool\nlibs:\n\t$(MAKE) -C lib\napp: main.o\n\t$(CC) -o app main.o lib/libu.a\nmain.o: main.c\n\t$(CC) -O1 -DNAME='\"x y\"' -Ilib -c main.c\ntool:\n\tcd tools && $(CC) -c -Wall t.c -o t.o\n.PHONY: all libs tool\n"),
        ("main.c", "int u(void);\nint main(void) { return u(); }\n"),
        ("lib/Makefile", "libu.a: u.o\n\tar rcs $@ $^\nu.o: u.c\n\t$(CC) -O2 \\\n\t  -c u.c -o u.o\n"),
        ("lib/u.c", "int u(void) { return 0; }\n"),
        ("tools/t.c", "int t;\n"),
    ];
    for (f, text) in files {
        std::fs::write(p.join(f), text).unwrap();
    }
    let n = Command::new("make")
        .arg("-n")
        .current_dir(&p)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert!(n.status.success());
    let log = String::from_utf8(n.stdout).unwrap();
    assert!(log.contains("Entering directory"), "{log}");
    let logged = tmp.path().join("from-log.json");
    let mut child = tracekit()
        .current_dir(&p)
        .args(["build", "spec", "--from-log", "-", "-o"])
        .arg(&logged)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(log.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    let recorded = tmp.path().join("recorded.json");
    let st = tracekit()
        .current_dir(&p)
        .args(["record", "build", "-o"])
        .arg(tmp.path().join("b.trace"))
        .arg("--compile-db")
        .arg(&recorded)
        .args(["--", "make"])
        .status()
        .unwrap();
    assert!(st.success());
    let read =
        |f: &Path| -> Value { serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap() };
    let (a, b) = (keys(&read(&logged)), keys(&read(&recorded)));
    assert_eq!(a, b);
    assert_eq!(a.len(), 3);
    if Command::new("bear")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        Command::new("make")
            .arg("clean")
            .current_dir(&p)
            .output()
            .ok();
        for f in ["app", "main.o", "lib/u.o", "lib/libu.a", "tools/t.o"] {
            let _ = std::fs::remove_file(p.join(f));
        }
        let bear = tmp.path().join("bear.json");
        let st = Command::new("bear")
            .arg("--output")
            .arg(&bear)
            .args(["--", "make"])
            .current_dir(&p)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .status()
            .unwrap();
        assert!(st.success());
        assert_eq!(a, keys(&read(&bear)), "Bear's database");
    }
}

fn report_json(args: &[&Path]) -> Value {
    let out = tracekit()
        .arg("report")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The one report of a `report --json` document of one `.ninja_log`
/// (`tracekit.report/1`, docs/report-json.md).
fn ninja_report(args: &[&Path]) -> Value {
    let doc = report_json(args);
    assert_eq!(doc["schema"], "tracekit.report/1");
    let reports = doc["reports"].as_array().unwrap();
    assert_eq!(reports.len(), 1, "{doc}");
    assert_eq!(reports[0]["dialect"], "ninja");
    reports[0].clone()
}

/// The section `id` of a report, anywhere in its tree.
fn section<'a>(r: &'a Value, id: &str) -> &'a Value {
    fn find<'a>(s: &'a Value, id: &str) -> Option<&'a Value> {
        s.as_array()?.iter().find_map(|x| {
            if x["id"] == id {
                Some(x)
            } else {
                find(&x["sections"], id)
            }
        })
    }
    find(&r["sections"], id).unwrap_or_else(|| panic!("no section {id}"))
}

/// A summary item's value.
fn item(r: &Value, section_id: &str, key: &str) -> Value {
    section(r, section_id)["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["key"] == key)
        .unwrap_or_else(|| panic!("no item {key} in {section_id}"))["value"]
        .clone()
}

/// A table's rows (objects keyed by column).
fn rows<'a>(r: &'a Value, id: &str) -> &'a Vec<Value> {
    section(r, id)["rows"].as_array().unwrap()
}

/// A column of the critical path, in order.
fn path_of(r: &Value, column: &str) -> Vec<String> {
    rows(r, "critical_path")
        .iter()
        .map(|t| t[column].as_str().unwrap().to_string())
        .collect()
}

/// The real expat CMake + Ninja build directory (build.ninja, its
/// included rules.ninja, and a .ninja_log of two runs): the last entry of
/// each output wins, and the critical path goes over the real graph.
#[test]
fn ninja_log_of_a_real_cmake_build() {
    let dir = root().join("expat-2.5.0/build");
    let r = ninja_report(&[&dir]);
    assert_eq!(item(&r, "summary", "version"), 5);
    assert_eq!(item(&r, "summary", "entries"), 22);
    assert_eq!(item(&r, "summary", "runs"), 2);
    assert_eq!(item(&r, "summary", "targets"), 10);
    let targets = rows(&r, "slowest_targets");
    assert_eq!(targets.len(), 10);
    // The second run's xmlparse.c.o (line 14: 17 → 23677 ms), not the
    // first's (line 3: 1 → 16808).
    let xmlparse = targets
        .iter()
        .find(|t| t["outputs"] == "CMakeFiles/expat.dir/lib/xmlparse.c.o")
        .unwrap();
    assert_eq!(xmlparse["duration_ms"], 23660);
    assert_eq!(xmlparse["line"], 14);
    assert_eq!(
        (&xmlparse["start_ms"], &xmlparse["run"]),
        (&17.into(), &2.into())
    );
    // Named from its command in build.ninja (the source as CMake wrote
    // it: absolute, outside this copy of the build directory).
    assert_eq!(
        xmlparse["name"],
        "/home/dev/expat-2.5.0/lib/xmlparse.c → CMakeFiles/expat.dir/lib/xmlparse.c.o"
    );
    assert_eq!(xmlparse["kind"], "compile");
    // The symlink step's two outputs are one target.
    assert!(targets
        .iter()
        .any(|t| t["outputs"] == "libexpat.so.1, libexpat.so"));
    let path = path_of(&r, "outputs");
    assert_eq!(
        path,
        [
            "CMakeFiles/expat.dir/lib/xmlparse.c.o",
            "libexpat.so.1.8.10",
            "libexpat.so.1, libexpat.so",
            "xmlwf/xmlwf"
        ]
    );
    // Each linked to the one before by an input its build statement
    // declares (the symlinks' libexpat.so for xmlwf).
    let linked: Vec<(&Value, &Value)> = rows(&r, "critical_path")
        .iter()
        .map(|t| (&t["link"], &t["via"]))
        .collect();
    assert_eq!(
        linked,
        [
            (&Value::Null, &Value::Null),
            (
                &"declared".into(),
                &"CMakeFiles/expat.dir/lib/xmlparse.c.o".into()
            ),
            (&"declared".into(), &"libexpat.so.1.8.10".into()),
            (&"declared".into(), &"libexpat.so".into()),
        ]
    );
    // 23660 + 300 + 246 + 147 ms, the four targets' durations in the log.
    assert_eq!(item(&r, "summary", "critical_path"), 24353);
    assert_eq!(item(&r, "critical_path_totals", "total"), 24353);
    assert_eq!(item(&r, "critical_path_totals", "wall_time"), 26913);
    // Job slots: at most 2 commands ran at once (ninja -j2). xmltok.c.o,
    // ready at the run's start, started at 2862 ms when xmlrole.c.o ended:
    // from 17 ms (the first start) on, both slots were busy.
    assert_eq!(item(&r, "job_slot_totals", "jobs"), 2);
    let xmltok = rows(&r, "job_slot_waits")
        .iter()
        .find(|w| {
            w["name"]
                .as_str()
                .unwrap()
                .ends_with("CMakeFiles/expat.dir/lib/xmltok.c.o")
        })
        .unwrap();
    assert_eq!(
        (
            xmltok["slot_wait_ms"].as_u64(),
            xmltok["other_wait_ms"].as_u64()
        ),
        (Some(2845), Some(17))
    );
    // The last run on a Gantt chart: every target, two lanes, the
    // critical path highlighted.
    let gantt = section(&r, "gantt");
    assert_eq!(gantt["spans"].as_array().unwrap().len(), 10);
    assert_eq!(gantt["lanes"].as_array().unwrap().len(), 2);
    let lit = gantt["spans"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["highlight"] == true)
        .count();
    assert_eq!(lit, 4);
    // ninja's own graph (`ninja -t graph`) gives the same path for the
    // log alone; ninja's deps log (`ninja -t deps`) adds no edge here (no
    // generated header).
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join(".ninja_log");
    std::fs::copy(dir.join(".ninja_log"), &log).unwrap();
    let alone = ninja_report(&[&log]);
    assert_eq!(item(&alone, "summary", "critical_path"), Value::Null);
    assert_eq!(section(&alone, "critical_path")["kind"], "notes");
    let g = ninja_report(&[
        &log,
        &root().join("expat-2.5.0/ninja-t-graph.dot"),
        &root().join("expat-2.5.0/ninja-t-deps.log"),
    ]);
    assert_eq!(path_of(&g, "outputs"), path);
    assert_eq!(item(&g, "summary", "critical_path"), 24353);
    assert_eq!(item(&g, "critical_path_totals", "header_dependencies"), 0);
}

#[test]
fn ninja_log_diff_lists_slower_targets() {
    let out = tracekit()
        .args(["report", "--diff", "--json"])
        .arg(root().join("expat-2.5.0/run1.ninja_log"))
        .arg(root().join("expat-2.5.0/build/.ninja_log"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = &d["changed"][0];
    assert_eq!(first["target"], "CMakeFiles/expat.dir/lib/xmlparse.c.o");
    // 16808 - 1 → 23677 - 17 ms.
    assert_eq!(
        (first["before_ms"].as_u64(), first["after_ms"].as_u64()),
        (Some(16807), Some(23660))
    );
    assert_eq!(d["changed"].as_array().unwrap().len(), 10);
    assert_eq!(d["added"], Value::Array(vec![]));
}

fn ninja_available() -> bool {
    let ok = Command::new("ninja")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "ninja is needed (.ci/run installs ninja-build)"
        );
        eprintln!("ninja is not installed: the live ninja test did not run");
    }
    ok
}

/// A small ninja project: the database from `ninja -t commands` equals
/// the one `record build` writes while ninja runs; the `.ninja_log` that
/// run leaves has the build's targets and a critical path through the
/// archive to the program.
#[test]
fn live_ninja_t_commands_equals_the_recorded_build() {
    if !make_available() || !ninja_available() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("proj");
    std::fs::create_dir_all(p.join("src")).unwrap();
    let files = [
        ("build.ninja", "cflags = -O2 -Isrc\nrule cc\n  command = cc $cflags -c $in -o $out\nrule ar\n  command = rm -f $out && ar rcs $out $in\nrule link\n  command = cc $in -o $out\nbuild a.o: cc src/a.c\nbuild b.o: cc src/b.c\n  cflags = -O0 -DB=\"1 2\"\nbuild libab.a: ar a.o b.o\nbuild main.o: cc src/main.c\nbuild app: link main.o libab.a\ndefault app\n"),
        ("src/a.c", "int a(void) { return 1; }\n"),
        ("src/b.c", "int b(void) { return 2; }\n"),
        ("src/main.c", "int a(void); int b(void);\nint main(void) { return a() + b() - 3; }\n"),
    ];
    for (f, text) in files {
        std::fs::write(p.join(f), text).unwrap();
    }
    let c = Command::new("ninja")
        .args(["-t", "commands"])
        .current_dir(&p)
        .output()
        .unwrap();
    assert!(c.status.success());
    let logged = tmp.path().join("from-log.json");
    let mut child = tracekit()
        .current_dir(&p)
        .args(["build", "spec", "--from-log", "-", "-o"])
        .arg(&logged)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&c.stdout).unwrap();
    assert!(child.wait().unwrap().success());
    let recorded = tmp.path().join("recorded.json");
    let st = tracekit()
        .current_dir(&p)
        .args(["record", "build", "-o"])
        .arg(tmp.path().join("b.trace"))
        .arg("--compile-db")
        .arg(&recorded)
        .args(["--", "ninja", "-j1"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let read =
        |f: &Path| -> Value { serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap() };
    let (a, b) = (keys(&read(&logged)), keys(&read(&recorded)));
    assert_eq!(a, b);
    assert_eq!(a.len(), 3);
    let r = ninja_report(&[&p]);
    assert_eq!(item(&r, "summary", "targets"), 5);
    let path = path_of(&r, "name");
    assert_eq!(path.len(), 3, "{path:?}");
    assert_eq!(path[1..], ["libab.a", "app"]);
}

/// Bear 4's YAML configuration and --drop-flag on a real log: file paths
/// as written (`format.paths: as-is`), duplicates by directory alone,
/// `-W...` flags taken out.
#[test]
fn bear4_config_and_dropped_flags_on_a_log() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home-dev");
    bear_db(&home, "hiredis-0.14.1/bear-3.1.1.compile_commands.json");
    let config = tmp.path().join("bear.yml");
    std::fs::write(
        &config,
        "schema: \"4.1\"\nintercept:\n  mode: preload\nformat:\n  paths:\n    directory: as-is\n    file: as-is\n",
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let (db, report, status) = from_log(
        &home,
        &log_text("hiredis-0.14.1/make-n.log"),
        "hiredis-0.14.1",
        &["--config", cfg, "--drop-flag=-W*"],
    );
    assert!(status.success(), "{report}");
    let files: Vec<&str> = db
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["file"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "net.c",
            "hiredis.c",
            "sds.c",
            "async.c",
            "read.c",
            "alloc.c",
            "test.c"
        ]
    );
    assert_eq!(report["dropped_flags"], 7 * 4);
    assert!(!db.to_string().contains("-Wall"));
    std::fs::write(
        &config,
        "schema: 4.1\nduplicates:\n  match_on: [directory]\n",
    )
    .unwrap();
    let (db, _, _) = from_log(
        &home,
        &log_text("hiredis-0.14.1/make-n.log"),
        "hiredis-0.14.1",
        &["--config", cfg],
    );
    assert_eq!(db.as_array().unwrap().len(), 1);
}

/// The Klocwork build specification from hiredis' `make -n` equals the
/// one from tracekit's recording of the same project's `make -j2`
/// (`tests/corpus/buildtrace/recorded/`, same directory): the same
/// compile and link records (in another order: -j2 ran them otherwise).
#[test]
fn kwinject_spec_from_a_log_equals_the_recorded_builds() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = root().join("..");
    let from_trace = tmp.path().join("trace.kw");
    let out = tracekit()
        .args(["build", "spec", "--format", "kwinject", "-o"])
        .arg(&from_trace)
        .arg(corpus.join("recorded/hiredis-0.14.1-make-j2.trace"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_log = tmp.path().join("log.kw");
    let out = tracekit()
        .args([
            "build",
            "spec",
            "--format",
            "kwinject",
            "-C",
            "/home/dev/hiredis-0.14.1",
            "-o",
        ])
        .arg(&from_log)
        .arg("--from-log")
        .arg(root().join("hiredis-0.14.1/make-n.log"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = |p: &Path| -> BTreeSet<String> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    };
    let (a, b) = (lines(&from_trace), lines(&from_log));
    assert_eq!(a, b);
    assert_eq!(a.iter().filter(|l| l.starts_with("compile;")).count(), 7);
    assert_eq!(a.iter().filter(|l| l.starts_with("link;")).count(), 3);
}

/// A ninja build directory is one input of `convert --to parquet` (not
/// its files one by one): the last run's 10 targets are 10 slices.
#[test]
fn ninja_build_directory_to_parquet() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tracekit()
        .args(["convert", "--to", "parquet", "-o"])
        .arg(tmp.path().join("t"))
        .arg(root().join("expat-2.5.0/build"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let slices = text.lines().find(|l| l.starts_with("slices")).unwrap_or("");
    assert!(slices.contains(" 10 rows"), "{text}");
}

/// `@file` response files named in a log are spliced in when they exist
/// (relative to the command's directory); a missing one stays as the
/// token and is counted; --bear3 keeps every token, as Bear 3.1.1 does.
#[test]
fn response_files_in_a_log() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home-dev");
    std::fs::create_dir_all(home.join("w")).unwrap();
    for f in ["w/a.c", "w/b.c"] {
        std::fs::write(home.join(f), "").unwrap();
    }
    std::fs::write(home.join("w/args.rsp"), "-DX=\"a b\" -Iinc\n").unwrap();
    let log = "cc @args.rsp -c a.c\ncc @missing.rsp -c b.c\n";
    let (db, report, status) = from_log(&home, log, "w", &[]);
    assert!(status.success());
    let args = |i: usize| -> Vec<&str> {
        db[i]["arguments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect()
    };
    assert_eq!(args(0), ["/usr/bin/cc", "-DX=a b", "-Iinc", "-c", "a.c"]);
    assert_eq!(args(1), ["/usr/bin/cc", "@missing.rsp", "-c", "b.c"]);
    assert_eq!(report["missing_response_files"], 1);
    let (db, _, _) = from_log(&home, log, "w", &["--bear3"]);
    assert_eq!(db[0]["arguments"][1], "@args.rsp");
}

/// A v7 log (ninja 1.13.0, PyPI's `ninja` wheel) of the same expat build,
/// with ninja 1.11's `-t graph` of its build directory: the same path.
#[test]
fn ninja_log_v7_of_the_same_build() {
    let r = ninja_report(&[
        &root().join("expat-2.5.0/ninja-1.13.0-v7.ninja_log"),
        &root().join("expat-2.5.0/ninja-t-graph.dot"),
    ]);
    assert_eq!(item(&r, "summary", "version"), 7);
    assert_eq!(
        (
            item(&r, "summary", "runs").as_u64(),
            item(&r, "summary", "warnings").as_u64()
        ),
        (Some(1), Some(0))
    );
    assert_eq!(rows(&r, "slowest_targets").len(), 10);
    assert_eq!(
        path_of(&r, "outputs"),
        [
            "CMakeFiles/expat.dir/lib/xmlparse.c.o",
            "libexpat.so.1.8.10",
            "libexpat.so.1, libexpat.so",
            "xmlwf/xmlwf"
        ]
    );
    // 4583 + 120 + 104 + 60 ms.
    assert_eq!(item(&r, "summary", "critical_path"), 4867);
}
