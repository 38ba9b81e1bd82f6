//! Build steps, their file dependencies, the critical path and job-slot
//! waits, on real `-j2` builds recorded by tracekit
//! (tests/corpus/buildtrace/recorded/: hiredis 0.14.1 with its Makefile,
//! expat 2.5.0 with CMake and Ninja).

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use tracekit_kwinject::analysis::{report_json, report_text, Build};
use tracekit_kwinject::steps::{Named, StepGraph, StepKind, StepOptions, WidthHow};
use tracekit_kwinject::trace::Trace;

fn read(name: &str) -> Trace {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/corpus/buildtrace/recorded"
    ))
    .join(name);
    Trace::read(BufReader::new(File::open(path).expect("corpus file"))).expect("readable trace")
}

fn text(b: &Build) -> String {
    let mut out = Vec::new();
    report_text(b, 10, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn step_named(g: &StepGraph, name: &str) -> usize {
    g.steps
        .iter()
        .position(|s| s.name == name)
        .unwrap_or_else(|| panic!("no step {name:?}"))
}

/// The critical path tracekit used to print: from the root, the child that
/// ended last, before it the child that ended last before that one
/// started, and so on (top level only). Kept here to show where it and the
/// dependency graph disagree.
fn old_heuristic(b: &Build) -> Vec<usize> {
    let t = b.trace;
    let root = b.roots()[0];
    let mut steps = Vec::new();
    let mut until = t.processes[root].end_us.unwrap();
    loop {
        let next = b.children[root]
            .iter()
            .copied()
            .filter(|&c| t.processes[c].end_us.is_some_and(|e| e <= until) && !steps.contains(&c))
            .max_by_key(|&c| t.processes[c].end_us);
        let Some(c) = next else { break };
        steps.push(c);
        until = t.processes[c].start_us.unwrap();
    }
    steps.reverse();
    steps
}

/// hiredis under `make -j2`: the old heuristic chains compile units that
/// only waited for a free job slot (the one that ended last before the
/// next started); the path over the files each step wrote and read is
/// hiredis.c → libhiredis.a → hiredis-test.
#[test]
fn critical_path_follows_files_not_job_slots() {
    let t = read("hiredis-0.14.1-make-j2.trace");
    let b = Build::new(&t);
    let g = b.steps(&StepOptions::default());
    let cp = g.critical_path.as_ref().expect("a timed trace has a path");
    let path: Vec<(StepKind, &str)> = cp
        .steps
        .iter()
        .map(|&s| (g.steps[s].kind, g.steps[s].name.as_str()))
        .collect();
    assert_eq!(
        path,
        [
            (StepKind::Compile, "hiredis.c → hiredis.o"),
            (StepKind::Archive, "libhiredis.a"),
            (StepKind::Link, "hiredis-test"),
        ]
    );
    // Each step reads what the one before it wrote, named on its command
    // line; the length is the sum of the steps' durations.
    let files: Vec<&str> = cp.edges.iter().map(|&e| g.edges[e].file.as_str()).collect();
    assert_eq!(
        files,
        [
            "/home/dev/hiredis-0.14.1/hiredis.o",
            "/home/dev/hiredis-0.14.1/libhiredis.a"
        ]
    );
    assert!(cp
        .edges
        .iter()
        .all(|&e| g.edges[e].named == Named::Argument));
    let sum: u64 = cp
        .steps
        .iter()
        .map(|&s| g.steps[s].duration_us().unwrap())
        .sum();
    assert_eq!(cp.total_us, sum);
    assert_eq!(cp.total_us, 3_964_186);

    // The old heuristic: a chain of five compile units and the link, two
    // of them joined by no file at all.
    let old: Vec<&str> = old_heuristic(&b)
        .into_iter()
        .filter_map(|i| g.step_of[i].map(|s| g.steps[s].name.as_str()))
        .filter(|n| n.contains('→') || *n == "hiredis-test")
        .collect();
    assert_eq!(
        old,
        [
            "hiredis.c → hiredis.o",
            "async.c → async.o",
            "alloc.c → alloc.o",
            "test.c → test.o",
            "hiredis-test"
        ]
    );
    let async_ = step_named(&g, "async.c → async.o");
    let alloc = step_named(&g, "alloc.c → alloc.o");
    assert!(!g.edges.iter().any(|e| e.from == async_ && e.to == alloc));

    // Every object reaches the archive and the shared library; the test
    // program reads test.o and the archive.
    let count = |w: StepKind, r: StepKind| {
        g.edges
            .iter()
            .filter(|e| e.written_by == w && e.read_by == r)
            .count()
    };
    assert_eq!(count(StepKind::Compile, StepKind::Archive), 6);
    assert_eq!(count(StepKind::Compile, StepKind::Link), 7);
    assert_eq!(count(StepKind::Archive, StepKind::Link), 1);
    assert_eq!(g.edges.len(), 14);

    let txt = text(&b);
    assert!(
        txt.contains("compile  hiredis.c → hiredis.o\n")
            && txt.contains("archive  libhiredis.a  (reads hiredis.o)\n")
            && txt.contains("link     hiredis-test  (reads libhiredis.a)\n"),
        "{txt}"
    );
    assert!(
        txt.contains("6  compile output read by archive (named on the command line)"),
        "{txt}"
    );
    let j = report_json(&b, 5);
    assert_eq!(j["critical_path"]["total_us"], 3_964_186);
}

/// Job-slot waits on the same build: `-j2` from make's arguments; a compile
/// that was ready from the start (its source is no step's output) waited
/// exactly the time two jobs ran before it started; steps that name no
/// file they read get no wait.
#[test]
fn job_slot_waits() {
    let t = read("hiredis-0.14.1-make-j2.trace");
    let b = Build::new(&t);
    let g = b.steps(&StepOptions::default());
    assert_eq!(g.width.jobs, Some(2));
    assert!(matches!(&g.width.how, WidthHow::Argument { text, .. } if text == "-j2"));
    // Make's own `$(shell grep ...)` calls ran beside its two jobs: the
    // trace cannot tell them from recipe lines.
    assert_eq!(g.peak_jobs, 3);
    let make_start = t.processes[0].start_us.unwrap();
    // Time in [from, to) during which at least two steps ran, counted
    // here independently, interval by interval.
    let full = |from: u64, to: u64| -> u64 {
        let mut cuts: Vec<u64> = vec![from, to];
        for s in &g.steps {
            for x in [s.start_us, s.end_us].into_iter().flatten() {
                if x > from && x < to {
                    cuts.push(x);
                }
            }
        }
        cuts.sort();
        cuts.windows(2)
            .filter(|w| {
                let mid2 = w[0] + w[1]; // twice the midpoint
                let running = g
                    .steps
                    .iter()
                    .filter(|s| {
                        let (Some(a), Some(e)) = (s.start_us, s.end_us) else {
                            return false;
                        };
                        2 * a <= mid2 && mid2 < 2 * e
                    })
                    .count();
                running >= 2
            })
            .map(|w| w[1] - w[0])
            .sum()
    };
    for w in &g.waits {
        let s = &g.steps[w.step];
        assert_ne!(s.kind, StepKind::Other);
        let start = s.start_us.unwrap();
        assert_eq!(w.slot_us + w.other_us, start - w.ready_us, "{}", s.name);
        assert_eq!(w.slot_us, full(w.ready_us, start), "{}", s.name);
    }
    assert_eq!(
        g.waits.len(),
        g.steps.iter().filter(|s| s.kind != StepKind::Other).count()
    );
    let test_c = step_named(&g, "test.c → test.o");
    let w = g.waits.iter().find(|w| w.step == test_c).unwrap();
    assert_eq!((w.ready_us, w.ready_after), (make_start, None));
    assert_eq!(w.slot_us, 5_964_313);
    // The archive became ready when the last of its objects was written.
    let ar = step_named(&g, "libhiredis.a");
    let w = g.waits.iter().find(|w| w.step == ar).unwrap();
    let last = g
        .edges
        .iter()
        .filter(|e| e.to == ar)
        .max_by_key(|e| g.steps[e.from].end_us)
        .unwrap();
    assert_eq!(w.ready_after, Some(last.from));
    assert_eq!(w.ready_us, g.steps[last.from].end_us.unwrap());
    let txt = text(&b);
    assert!(txt.contains("Job slots: 2 (from make's -j2)"), "{txt}");
    assert!(txt.contains("5.96 s  compile  test.c → test.o"), "{txt}");
}

/// CMake + Ninja runs every job as `/bin/sh -c /usr/bin/cc -D... -I...`:
/// each step is named by source → object (link steps by their output),
/// nowhere by the cut command line; the library's symlink step is folded.
#[test]
fn steps_are_named_by_what_they_build() {
    let t = read("expat-2.5.0-ninja-j2.trace");
    let b = Build::new(&t);
    let g = b.steps(&StepOptions::default());
    let mut names: Vec<(StepKind, &str)> = g
        .steps
        .iter()
        .filter(|s| s.kind != StepKind::Other)
        .map(|s| (s.kind, s.name.as_str()))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            (
                StepKind::Compile,
                "../lib/xmlparse.c → CMakeFiles/expat.dir/lib/xmlparse.c.o"
            ),
            (
                StepKind::Compile,
                "../lib/xmlrole.c → CMakeFiles/expat.dir/lib/xmlrole.c.o"
            ),
            (
                StepKind::Compile,
                "../lib/xmltok.c → CMakeFiles/expat.dir/lib/xmltok.c.o"
            ),
            (
                StepKind::Compile,
                "../xmlwf/codepage.c → CMakeFiles/xmlwf.dir/xmlwf/codepage.c.o"
            ),
            (
                StepKind::Compile,
                "../xmlwf/readfilemap.c → CMakeFiles/xmlwf.dir/xmlwf/readfilemap.c.o"
            ),
            (
                StepKind::Compile,
                "../xmlwf/xmlfile.c → CMakeFiles/xmlwf.dir/xmlwf/xmlfile.c.o"
            ),
            (
                StepKind::Compile,
                "../xmlwf/xmlwf.c → CMakeFiles/xmlwf.dir/xmlwf/xmlwf.c.o"
            ),
            (StepKind::Link, "libexpat.so.1.8.10"),
            (StepKind::Link, "xmlwf/xmlwf"),
        ]
    );
    let other: Vec<_> = g
        .steps
        .iter()
        .filter(|s| s.kind == StepKind::Other)
        .collect();
    assert_eq!(other.len(), 1);
    assert!(other[0]
        .name
        .starts_with("/usr/bin/cmake -E cmake_symlink_library"));
    assert!(other[0].folded, "{:?}", other[0]);
    // The program links the library the build made.
    let cp = g.critical_path.as_ref().unwrap();
    let path: Vec<&str> = cp.steps.iter().map(|&s| g.steps[s].name.as_str()).collect();
    assert_eq!(
        path,
        [
            "../lib/xmltok.c → CMakeFiles/expat.dir/lib/xmltok.c.o",
            "libexpat.so.1.8.10",
            "xmlwf/xmlwf"
        ]
    );
    let txt = text(&b);
    for line in [
        "sh -c: compile ../lib/xmlparse.c → CMakeFiles/expat.dir/lib/xmlparse.c.o",
        "cc: compile ../lib/xmlparse.c → CMakeFiles/expat.dir/lib/xmlparse.c.o",
        "sh -c: link xmlwf/xmlwf",
        "link     xmlwf/xmlwf  (reads libexpat.so.1.8.10)",
        "1  link output read by link (named on the command line)",
        "(1 short step folded: /usr/bin/cmake -E cmake_symlink_library",
    ] {
        assert!(txt.contains(line), "{line:?} not in\n{txt}");
    }
    assert!(!txt.contains("/bin/sh -c /usr/bin/cc"), "{txt}");
}

/// hiredis writes hiredis.pc with a dozen `echo ... >> hiredis.pc` recipe
/// lines: short steps that build nothing, folded in the process tree.
#[test]
fn trivial_shell_steps_fold() {
    let t = read("hiredis-0.14.1-make-j2.trace");
    let b = Build::new(&t);
    let g = b.steps(&StepOptions::default());
    let echoes: Vec<_> = g
        .steps
        .iter()
        .filter(|s| s.name.starts_with("echo ") && s.name.ends_with(">> hiredis.pc"))
        .collect();
    assert_eq!(echoes.len(), 9);
    assert!(echoes.iter().all(|s| s.folded && s.kind == StepKind::Other));
    // No fold threshold: nothing folds.
    let g0 = b.steps(&StepOptions {
        fold_under_us: Some(0),
    });
    assert!(g0.steps.iter().all(|s| !s.folded));
    let txt = text(&b);
    assert!(
        txt.contains("short steps folded, the first: grep HIREDIS_MAJOR hiredis.h"),
        "{txt}"
    );
    assert!(!txt.contains("echo Version: 0.14.1 >> hiredis.pc"), "{txt}");
}

/// The README's build tour (`report` and `convert` lines) uses a trace
/// tracekit recorded, with times: its timeline holds every process and its
/// report has a critical path. A Klocwork-style trace has no times and
/// would give an empty timeline.
#[test]
fn readme_build_tour_uses_a_timed_trace() {
    use tracekit_kwinject::analysis::to_chrome;
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut seen = 0;
    for line in readme.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (Some(&"tracekit"), Some(verb)) = (words.first(), words.get(1)) else {
            continue;
        };
        if !["report", "convert", "info"].contains(verb) {
            continue;
        }
        for w in words.iter().filter(|w| w.starts_with("examples/build/")) {
            seen += 1;
            let f = File::open(root.join(w)).unwrap();
            let t = Trace::read(BufReader::new(f)).unwrap();
            let b = Build::new(&t);
            let (_, skipped) = to_chrome(&b, Vec::new()).unwrap();
            assert_eq!(skipped, 0, "{line}: {w} has processes without times");
            assert!(
                b.steps(&StepOptions::default()).critical_path.is_some(),
                "{w}"
            );
        }
    }
    assert!(seen >= 2, "the README's build tour names no example trace");
}
