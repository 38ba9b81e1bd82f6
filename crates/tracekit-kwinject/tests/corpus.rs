//! The real and hand-made traces of tests/corpus/buildtrace against the
//! reference outputs beside them (Bear 3.1.1's databases, the build-spec
//! records of the corpus README).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tracekit_kwinject::cdb::{CdbBuilder, CdbOptions};
use tracekit_kwinject::env::{EnvBase, EnvFolder};
use tracekit_kwinject::kwspec::SpecBuilder;
use tracekit_kwinject::trace::{Env, Process, Trace};

fn corpus(name: &str) -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/corpus/buildtrace"
    ))
    .join(name)
}

fn read(name: &str) -> Trace {
    let f = File::open(corpus(name)).expect("corpus file");
    Trace::read(BufReader::new(f)).expect("readable trace")
}

fn envs(t: &Trace, mode: EnvBase) -> Vec<Env> {
    let mut folder = EnvFolder::new(t.env.clone(), mode);
    let mut w = tracekit_core::Warnings::default();
    t.processes
        .iter()
        .map(|p| (*folder.fold(p, &mut w)).clone())
        .collect()
}

#[test]
fn kwtrace01_reads_and_folds() {
    let t = read("kwtrace-01-make-nested.jsonl");
    assert_eq!(t.version, Some(101));
    assert_eq!(t.processes.len(), 16);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let by_parent = envs(&t, EnvBase::Parent);
    // Both readings of env-diff agree on this file (corpus README).
    assert_eq!(by_parent, envs(&t, EnvBase::TopLevel));
    let i = t
        .processes
        .iter()
        .position(|p| p.id == 4108 && p.executable == "/usr/bin/gcc")
        .expect("gcc 4108");
    let env = &by_parent[i];
    assert_eq!(env.get("LANG"), None);
    assert_eq!(env.get("LC_ALL").map(String::as_str), Some("C"));
    assert_eq!(
        env.get("MAKEFLAGS").map(String::as_str),
        Some(" -j2 --jobserver-auth=3,4")
    );
    assert_eq!(env.get("HOME").map(String::as_str), Some("/home/dev"));
}

#[test]
fn kwtrace03_no_parent_and_collisions() {
    let t = read("kwtrace-03-kwwrap-no-parent.jsonl");
    assert_eq!(t.processes.len(), 5);
    assert!(t.processes.iter().all(|p| p.parent_id.is_none()));
    let mut folder = EnvFolder::new(t.env.clone(), EnvBase::Parent);
    let mut w = tracekit_core::Warnings::default();
    let envs: Vec<_> = t.processes.iter().map(|p| folder.fold(p, &mut w)).collect();
    assert_eq!(w.total(), 1, "the colliding id 732 is reported once: {w:?}");
    assert_eq!(envs[2].get("CCACHE_DIR"), None);
    assert_eq!(
        envs[2].get("CCACHE_NOHASHDIR").map(String::as_str),
        Some("1")
    );
    assert!(t.processes[2].args.iter().any(|a| a == "ünïcode_menu.cpp"));
}

#[test]
fn round_trip_is_identical() {
    for name in [
        "kwtrace-01-make-nested.jsonl",
        "kwtrace-02-ninja-response-files.jsonl",
        "kwtrace-03-kwwrap-no-parent.jsonl",
    ] {
        let t = read(name);
        let bytes = t.write(Vec::new()).unwrap();
        let back = Trace::read(&bytes[..]).unwrap();
        let strip = |ps: &[Process]| -> Vec<Process> {
            ps.iter()
                .map(|p| Process {
                    line: 0,
                    ..p.clone()
                })
                .collect()
        };
        assert_eq!(strip(&t.processes), strip(&back.processes), "{name}");
        assert_eq!(t.env, back.env);
        assert_eq!(t.creator, back.creator);
        // Every line of the corpus file is one JSON value of ours (same content).
        let orig: Vec<Value> = std::fs::read_to_string(corpus(name))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let ours: Vec<Value> = String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(orig, ours, "{name}");
    }
}

fn cdb_of(t: &Trace, opts: CdbOptions) -> Value {
    let mut folder = EnvFolder::new(t.env.clone(), EnvBase::Parent);
    let mut w = tracekit_core::Warnings::default();
    let mut b = CdbBuilder::new(opts);
    for p in &t.processes {
        let env = folder.fold(p, &mut w);
        b.add(p, &env);
    }
    let mut out = Vec::new();
    b.write(&mut out).unwrap();
    serde_json::from_slice(&out).unwrap()
}

fn bear(name: &str) -> Value {
    serde_json::from_reader(File::open(corpus(name)).unwrap()).unwrap()
}

fn bear3() -> CdbOptions {
    CdbOptions {
        existing_only: false,
        bear3: true,
        with_output: true,
        expand_response_files: false,
        ..Default::default()
    }
}

#[test]
fn cdb_equals_bear_on_hand_made_traces() {
    for (trace, db) in [
        (
            "kwtrace-01-make-nested.jsonl",
            "kwtrace-01-make-nested.bear-3.1.1.compile_commands.json",
        ),
        (
            "kwtrace-02-ninja-response-files.jsonl",
            "kwtrace-02-ninja-response-files.bear-3.1.1.compile_commands.json",
        ),
        (
            "kwtrace-03-kwwrap-no-parent.jsonl",
            "kwtrace-03-kwwrap-no-parent.bear-3.1.1.compile_commands.json",
        ),
    ] {
        assert_eq!(cdb_of(&read(trace), bear3()), bear(db), "{trace}");
    }
}

#[test]
fn cdb_default_unwraps_distcc() {
    let t = read("kwtrace-03-kwwrap-no-parent.jsonl");
    let ours = cdb_of(
        &t,
        CdbOptions {
            bear3: false,
            ..bear3()
        },
    );
    let arr = ours.as_array().unwrap();
    assert_eq!(arr.len(), 3, "Bear's two plus the distcc one");
    assert_eq!(arr[1]["file"], "/srv/ci/ws/fw/drivers/spi.c");
    assert_eq!(arr[1]["arguments"][0], "arm-none-eabi-gcc");
}

/// `--expand-response-files`: the kwtrace-02 compile with its `@…rsp`
/// spliced in (the build directory mapped onto kwtrace-02-files).
#[test]
fn cdb_expands_response_files() {
    let mut t = read("kwtrace-02-ninja-response-files.jsonl");
    let files = corpus("kwtrace-02-files").display().to_string();
    for p in &mut t.processes {
        p.work_dir = p.work_dir.replace("/home/dev/proj/build", &files);
    }
    let db = cdb_of(
        &t,
        CdbOptions {
            expand_response_files: true,
            ..bear3()
        },
    );
    let args: Vec<&str> = db[0]["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        args,
        [
            "/usr/bin/g++",
            "-I/home/dev/proj/include",
            "-DAPP_VERSION=\"1.2\"",
            "-O2",
            "-std=gnu++17",
            "-c",
            "-o",
            "CMakeFiles/app.dir/src/main.cpp.o",
            "/home/dev/proj/src/main.cpp"
        ]
    );
}

/// The strace exec list of the real gzip build (615 execs) through our
/// rules gives exactly Bear's 64 entries of the same build.
#[test]
fn gzip_execs_give_bears_database() {
    let text = std::fs::read_to_string(corpus("gzip-1.12/execs.jsonl")).unwrap();
    let env: Env = [("PATH", "/usr/local/bin:/usr/bin:/bin")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut b = CdbBuilder::new(bear3());
    let mut n = 0;
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let mut p = Process::new(
            v["pid"].as_i64().unwrap(),
            v["ppid"].as_i64(),
            v["work_dir"].as_str().unwrap().into(),
            v["executable"].as_str().unwrap().into(),
        );
        p.args = serde_json::from_value(v["args"].clone()).unwrap();
        b.add(&p, &env);
        n += 1;
    }
    assert_eq!(n, 615);
    let mut out = Vec::new();
    b.write(&mut out).unwrap();
    let ours: Value = serde_json::from_slice(&out).unwrap();
    let key = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.to_string())
            .collect();
        k.sort();
        k
    };
    let reference = bear("gzip-1.12/compile_commands.json");
    assert_eq!(key(&ours).len(), 64);
    assert_eq!(key(&ours), key(&reference));
}

fn spec_of(name: &str, root: Option<(&str, PathBuf)>) -> String {
    let t = read(name);
    let reader = move |p: &str| -> Option<String> {
        let (from, to) = root.as_ref()?;
        let rel = p.strip_prefix(from)?;
        std::fs::read_to_string(to.join(rel.trim_start_matches('/'))).ok()
    };
    let mut folder = EnvFolder::new(t.env.clone(), EnvBase::Parent);
    let mut w = tracekit_core::Warnings::default();
    let mut b = SpecBuilder::new(&reader);
    for p in &t.processes {
        let env = folder.fold(p, &mut w);
        b.add(p, &env);
    }
    let mut out = Vec::new();
    b.write(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn kwinject_specs_match_the_readme() {
    assert_eq!(
        spec_of("kwtrace-01-make-nested.jsonl", None),
        "version;108
compile;/home/dev/zlib-1.3/lib;/usr/bin/gcc;/home/dev/zlib-1.3/lib/adler32.o;adler32.c;-I..;-DHAVE_UNISTD_H
compile;/home/dev/zlib-1.3;/usr/bin/gcc;/home/dev/zlib-1.3/example.o;example.c;-Ilib;-DHAVE_UNISTD_H
compile;/home/dev/zlib-1.3;/usr/bin/gcc;/home/dev/zlib-1.3/crc32.o;crc32.c;-Ilib
link;/home/dev/zlib-1.3;/home/dev/zlib-1.3/libz.a;/home/dev/zlib-1.3/lib/adler32.o;/home/dev/zlib-1.3/crc32.o
link;/home/dev/zlib-1.3;/home/dev/zlib-1.3/example;/home/dev/zlib-1.3/example.o;/home/dev/zlib-1.3/libz.a
"
    );
    assert_eq!(
        spec_of(
            "kwtrace-02-ninja-response-files.jsonl",
            Some(("/home/dev/proj/build", corpus("kwtrace-02-files")))
        ),
        "version;108
compile;/home/dev/proj/build;/usr/bin/g++;/home/dev/proj/build/CMakeFiles/app.dir/src/main.cpp.o;/home/dev/proj/src/main.cpp;-I/home/dev/proj/include;-DAPP_VERSION=\"1.2\";-std=gnu++17
link;/home/dev/proj/build;/home/dev/proj/build/libutil.a;/home/dev/proj/build/CMakeFiles/util.dir/src/strutil.cpp.o;/home/dev/proj/build/CMakeFiles/util.dir/src/fmt.cpp.o
link;/home/dev/proj/build;/home/dev/proj/build/app;/home/dev/proj/build/CMakeFiles/app.dir/src/main.cpp.o;/home/dev/proj/build/libutil.a
"
    );
    let s03 = spec_of("kwtrace-03-kwwrap-no-parent.jsonl", None);
    let kinds: BTreeMap<&str, usize> = s03.lines().fold(BTreeMap::new(), |mut m, l| {
        *m.entry(l.split(';').next().unwrap()).or_default() += 1;
        m
    });
    assert_eq!(kinds.get("compile"), Some(&3), "{s03}");
    assert_eq!(kinds.get("link"), Some(&1), "{s03}");
    assert!(s03.contains("compile;/srv/ci/ws/fw/app;/opt/arm/bin/arm-none-eabi-g++;"));
}

#[test]
fn truncated_and_corrupt_input() {
    let full = std::fs::read(corpus("kwtrace-01-make-nested.jsonl")).unwrap();
    // Cut in the middle of the last record: everything before it is kept.
    let cut = &full[..full.len() - 40];
    let t = Trace::read(cut).unwrap();
    assert_eq!(t.processes.len(), 15);
    assert_eq!(t.warnings.total(), 1);
    assert!(t.warnings.kept()[0].message.contains("truncated"));
    // A garbage line is skipped with a warning naming it.
    let mut bad = full.clone();
    bad.splice(
        0..0,
        b"{\"version\":101}\nnot json at all\n".iter().copied(),
    );
    let t = Trace::read(&bad[..]).unwrap();
    assert_eq!(t.processes.len(), 16);
    assert_eq!(
        t.warnings.kept()[0].position,
        tracekit_core::Position::Line(2)
    );
    // A record with a wrong type is an error naming its line.
    let e = Trace::read(&b"{\"version\":101}\n{\"id\":1,\"args\":\"gcc\"}\n"[..]).unwrap_err();
    assert!(
        e.to_string().contains(":2:") || e.to_string().contains("2"),
        "{e}"
    );
}

#[test]
fn pretty_printed_and_spelling_variants() {
    let text = b"{\"version\":100}\n{\n  \"env\": {\"A\": \"1\"}\n}\n{\"id\": 5,\n \"parentid\": -1,\n \"workdir\": \"/w\",\n \"executable\": \"/bin/cc\",\n \"args\": [\"cc\", \"-c\", \"x.c\"],\n \"env-diff\": {\"A\": null},\n \"future_key\": [1]\n}\n";
    let t = Trace::read(&text[..]).unwrap();
    assert_eq!(t.version, Some(100));
    assert_eq!(t.env.get("A").map(String::as_str), Some("1"));
    let p = &t.processes[0];
    assert_eq!(p.parent_id, Some(-1));
    assert_eq!(p.work_dir, "/w");
    assert_eq!(p.line, 5);
    assert_eq!(p.extra.get("future_key"), Some(&serde_json::json!([1])));
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

/// A tracekit recording (times, exits) through the report and the Chrome
/// conversion: the slices nest, every process is there, the analyses see
/// the slow compile and the path the build waited for.
#[test]
fn report_and_chrome_on_a_timed_trace() {
    use tracekit_kwinject::analysis::{report_json, report_text, to_chrome, Build};
    let text = r#"{"version":101}
{"creator":"tracekit, version 0.1.0"}
{"env":{"PATH":"/usr/bin:/bin"}}
{"id":10,"parent_id":-1,"work_dir":"/w","executable":"/usr/bin/make","args":["make","-j2"],"env-diff":{},"tk_start_us":1000000,"tk_end_us":1900000,"tk_exit":2}
{"id":11,"parent_id":10,"work_dir":"/w","executable":"/usr/bin/gcc","args":["gcc","-c","a.c"],"env-diff":{"MAKELEVEL":"1"},"tk_start_us":1010000,"tk_end_us":1300000,"tk_exit":0}
{"id":12,"parent_id":10,"work_dir":"/w","executable":"/usr/bin/gcc","args":["gcc","-c","b.c"],"env-diff":{"MAKELEVEL":"1"},"tk_start_us":1020000,"tk_end_us":1800000,"tk_exit":1}
{"id":13,"parent_id":12,"work_dir":"/w","executable":"/usr/lib/gcc/x86_64-linux-gnu/12/cc1","args":["cc1","b.c"],"env-diff":{},"tk_start_us":1030000,"tk_end_us":1790000,"tk_signal":11}
"#;
    let t = Trace::read(text.as_bytes()).unwrap();
    let b = Build::new(&t);
    assert_eq!(b.compile_units, 2);
    // No file joins the two compiles: the longest step is the path.
    let g = b.steps(&Default::default());
    let path = g.critical_path.as_ref().unwrap();
    assert_eq!(path.steps.len(), 1);
    assert_eq!(g.steps[path.steps[0]].name, "b.c → b.o");
    assert_eq!(path.total_us, 780_000);
    let (_, par) = b.parallelism(10).unwrap();
    // Leaves only: gcc a.c and cc1 run together; make and gcc b.c wait.
    assert!(
        (par[1] - 2.0).abs() < 1e-9 && (par[5] - 1.0).abs() < 1e-9,
        "{par:?}"
    );
    let j = report_json(&b, 1);
    assert_eq!(j["slowest_compile_units"][0]["file"], "/w/b.c");
    assert_eq!(j["processes"][3]["exit"]["signal"], 11);
    let mut txt = Vec::new();
    report_text(&b, 5, &mut txt).unwrap();
    let txt = String::from_utf8(txt).unwrap();
    assert!(
        txt.contains("4 processes, 2 compile units, 3 failed"),
        "{txt}"
    );
    let (out, skipped) = to_chrome(&b, Vec::new()).unwrap();
    assert_eq!(skipped, 0);
    let v: Value = serde_json::from_slice(&out).unwrap();
    let slices: Vec<&Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    assert_eq!(slices.len(), 4);
    // cc1 nests under its gcc on the same lane.
    let lane = |name: &str| {
        slices
            .iter()
            .find(|e| e["args"]["cmd"].as_str().unwrap().starts_with(name))
            .unwrap()["tid"]
            .clone()
    };
    assert_eq!(lane("cc1"), lane("gcc -c b.c"));
    assert_ne!(lane("gcc -c a.c"), lane("gcc -c b.c"));
}

/// Argv, paths and environments that are not UTF-8 survive a recording:
/// the record is marked `tk_encoding: latin1` and every byte comes back.
#[test]
fn non_utf8_bytes_round_trip() {
    use tracekit_kwinject::record::{Assembler, ExecEvent};
    use tracekit_kwinject::trace::latin1_bytes;
    let mut asm = Assembler::new(Default::default(), None);
    asm.root(5);
    asm.exec(ExecEvent {
        pid: 5,
        ppid: 1,
        time_us: 1,
        cwd: b"/w".to_vec(),
        executable: b"/usr/bin/gcc".to_vec(),
        argv: vec![b"gcc".to_vec(), b"-c".to_vec(), b"caf\xe9.c".to_vec()],
        env: vec![b"V=\xff\xfe".to_vec()],
    });
    let bytes = asm.write(Vec::new()).unwrap();
    let t = Trace::read(&bytes[..]).unwrap();
    let p = &t.processes[0];
    assert_eq!(p.extra.get("tk_encoding"), Some(&Value::from("latin1")));
    assert_eq!(latin1_bytes(&p.args[2]).unwrap(), b"caf\xe9.c");
    let v = p.env_diff.get("V").cloned().flatten().unwrap();
    assert_eq!(latin1_bytes(&v).unwrap(), b"\xff\xfe");
}

/// The Chrome timeline of a recorded build, against the blessed output
/// (`TRACEKIT_BLESS=1` re-blesses): one slice per process packed in lanes,
/// and a flow from each process to every child it started.
#[test]
fn recorded_build_timeline_is_stable() {
    use tracekit_kwinject::analysis::{to_chrome, Build};
    let t = read("recorded/hello-make-j2.trace");
    let b = Build::new(&t);
    let (out, skipped) = to_chrome(&b, Vec::new()).unwrap();
    assert_eq!(skipped, 0);
    let v: Value = serde_json::from_slice(&out).unwrap();
    let evs = v["traceEvents"].as_array().unwrap();
    let count = |ph: &str| evs.iter().filter(|e| e["ph"] == ph).count();
    assert_eq!(count("X"), t.processes.len());
    assert_eq!(count("f"), t.processes.len() - 1);
    assert_eq!(count("s"), count("f"));
    let expected =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expected/hello-make-j2.chrome.json");
    if std::env::var_os("TRACEKIT_BLESS").is_some() {
        std::fs::create_dir_all(expected.parent().unwrap()).unwrap();
        std::fs::write(&expected, &out).unwrap();
    }
    let want = std::fs::read(&expected).expect("expected output (TRACEKIT_BLESS=1 writes it)");
    assert!(
        want == out,
        "Chrome timeline differs from {}",
        expected.display()
    );
}

/// Every flag name of Bear 3.1.1's GCC and Clang tables in four forms, and
/// awkward command lines (empty arguments, launchers, CPATH, a flag short
/// of its value): with `--bear3`, every entry equals Bear's, in order.
#[test]
fn flag_edges_equal_bear() {
    let t = read("kwtrace-04-flag-edges.jsonl");
    assert_eq!(t.processes.len(), 1265);
    let ours = cdb_of(&t, bear3());
    let ours = ours.as_array().unwrap();
    let text = std::fs::read_to_string(corpus(
        "kwtrace-04-flag-edges.bear-3.1.1.compile_commands.jsonl",
    ))
    .unwrap();
    let reference: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reference.len(), 1234);
    let mut differ = Vec::new();
    let mut i = 0;
    let mut j = 0;
    // Walk both in order; report every entry one side lacks or has otherwise.
    while i < ours.len() || j < reference.len() {
        match (ours.get(i), reference.get(j)) {
            (Some(a), Some(b)) if a == b => {
                i += 1;
                j += 1;
            }
            (Some(a), Some(b)) if a["file"] == b["file"] => {
                differ.push(format!("ours:  {a}\nBear:  {b}"));
                i += 1;
                j += 1;
            }
            (Some(a), _) if !reference[j..].iter().any(|r| r["file"] == a["file"]) => {
                differ.push(format!("ours only: {a}"));
                i += 1;
            }
            (_, Some(b)) => {
                differ.push(format!("Bear only: {b}"));
                j += 1;
            }
            _ => unreachable!(),
        }
    }
    assert!(
        differ.is_empty(),
        "{} differences:\n{}",
        differ.len(),
        differ.join("\n")
    );
    // Without --bear3, tracekit unwraps icecc and keeps Clang's table behind ccache.
    let ours = cdb_of(
        &t,
        CdbOptions {
            bear3: false,
            ..bear3()
        },
    );
    let by_file = |f: &str| {
        ours.as_array()
            .unwrap()
            .iter()
            .find(|e| e["file"] == format!("/home/dev/proj/{f}"))
            .cloned()
    };
    // (`gcc` is looked up on the recorded PATH on this machine.)
    let icecc = by_file("e26.c").unwrap();
    assert!(
        icecc["arguments"][0].as_str().unwrap().ends_with("gcc"),
        "{icecc}"
    );
    assert_eq!(icecc["arguments"][1], "-c");
    assert_eq!(by_file("e19.c").unwrap()["arguments"][3], "-load");
}

/// The `tk_truncated` marker a recorder leaves when it could not write the
/// whole trace: read with a warning at its line, the missing records
/// counted as lost, written back as it was.
#[test]
fn truncation_marker() {
    let full = std::fs::read(corpus("recorded/hello-make-j2.trace")).unwrap();
    let mut text = String::from_utf8(full).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let kept = lines.len() - 3 - 4; // header lines, and 4 records not written
    text = lines[..3 + kept].join("\n");
    text.push('\n');
    text.push_str(
        "{\"tk_truncated\":{\"of\":14,\"reason\":\"No space left on device (os error 28)\",\"records\":10}}\n",
    );
    let t = Trace::read(text.as_bytes()).unwrap();
    assert_eq!(t.processes.len(), 10);
    let x = t.truncated.as_ref().unwrap();
    assert_eq!((x.records, x.of), (10, 14));
    assert_eq!(t.lost(), 4);
    assert_eq!(t.warnings.total(), 1);
    let w = &t.warnings.kept()[0];
    assert_eq!(w.position, tracekit_core::Position::Line(14));
    assert!(
        w.message.contains("truncated trace") && w.message.contains("No space left on device"),
        "{}",
        w.message
    );
    let back = t.write(Vec::new()).unwrap();
    assert_eq!(String::from_utf8(back).unwrap(), text);
    // A cut last line is one lost record.
    let cut = Trace::read(&text.as_bytes()[..text.len() - 20]).unwrap();
    assert_eq!((cut.truncated.is_none(), cut.lost()), (true, 1));
}
