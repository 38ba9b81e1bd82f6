//! `convert event.jsonl --to trace2-perf|trace2-normal` equals git's own
//! perf.log and normal.log, captured in the same run, on every field the
//! EVENT file carries, for both producers in the corpus: git 2.47.3
//! (tests/corpus/trace2) and git 2.39.5 (tests/corpus/trace2-git2.39).
//! The source lines of signal/atexit/timer/counter, which EVENT does not
//! carry for the other targets, are compared too (derived from `version`).
//!
//! What is masked, and why:
//! * the time of day: git samples the clock separately for each target;
//! * PERF's t_abs on events whose EVENT record has no t_abs (regions,
//!   child_start/exit, exec): we compute it from `time` and the SID, git
//!   from its monotonic clock;
//! * PERF lines of regions and data deeper than EVENT's nesting limit
//!   (default 2) are skipped: EVENT never saw them; for the same reason
//!   the dots of other events inside such regions are compared only up to
//!   the limit;
//! * the order of lines of *different* processes: each target is a
//!   separate append by each process, so concurrent processes interleave
//!   differently in each file. Lines are matched within a window of
//!   nearby lines; every line must match exactly one.
//!
//! One thing EVENT cannot tell: which of two processes sharing a SID (a
//! parent and the child git's `daemonize()` forked) wrote a record. PERF's
//! dots on a record without `nesting` come from its own process's region
//! depth; where the forked child left a region before its parent wrote
//! `exit`, the parent's `exit` gets the child's depth. [`UNKNOWABLE_DOTS`]
//! names those records (with the evidence); they must equal git's line but
//! for the dots.
//!
//! `TZ` is `UTC`, as in the capture.

use std::path::{Path, PathBuf};

use tracekit_trace2::convert::Converter;
use tracekit_trace2::reader::{detect, Format, RecordIter};
use tracekit_trace2::{Body, Kind};

/// EVENT records whose PERF dots EVENT does not determine: (case, line of
/// event.jsonl). 24-maintenance-detach, the `src` session: the detached
/// child's `region_leave` of `maintenance/detach`, `exit`, `atexit` (lines
/// 217-219) come before the parent's `exit` (220, `setup.c:1998`, written
/// inside the region: git's PERF shows `..code:0`) and `atexit` (221); no
/// field tells the parent's `exit` from one written after the region was
/// left.
const UNKNOWABLE_DOTS: &[(&str, u64)] = &[("24-maintenance-detach", 220)];

/// A PERF line without the dots that open its payload.
fn without_dots(line: &[u8]) -> Vec<u8> {
    match memchr::memmem::find_iter(line, b" | ").nth(7) {
        Some(p) => {
            let start = p + 3;
            let dots = line[start..].iter().take_while(|&&c| c == b'.').count();
            [&line[..start], &line[start + dots..]].concat()
        }
        None => line.to_vec(),
    }
}

/// The corpus of each git version.
const CORPORA: [&str; 2] = ["trace2", "trace2-git2.39"];

fn cases(corpus: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/corpus")
        .join(corpus);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("corpus")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("event.jsonl").exists() && p.join("perf.log").exists())
        .collect();
    v.sort();
    v
}

/// A converted record: its text and whether the source had t_abs.
struct Line {
    text: Vec<u8>,
    had_t_abs: bool,
    kind: Kind,
    /// The EVENT record's line.
    line: u64,
}

fn convert(event_file: &Path, target: Format) -> Vec<Line> {
    let data = std::fs::read(event_file).expect("read");
    let mut conv = Converter::new(target);
    let mut out = Vec::new();
    for rec in RecordIter::new(&data, Format::Event) {
        let ev = Format::Event.parse(rec.bytes).expect("corpus EVENT parses");
        let mut buf = Vec::new();
        conv.write(&ev, &mut buf).expect("corpus EVENT converts");
        if buf.is_empty() {
            continue;
        }
        out.push(Line {
            text: buf.strip_suffix(b"\n").unwrap_or(&buf).to_vec(),
            had_t_abs: ev.body.t_abs().is_some(),
            kind: ev.kind(),
            line: rec.line,
        });
    }
    out
}

fn expected(file: &Path) -> (Format, Vec<Vec<u8>>) {
    let data = std::fs::read(file).expect("read");
    let format = detect(&data).expect("format");
    let mut v = Vec::new();
    for rec in RecordIter::new(&data, format) {
        let ev = format.parse(rec.bytes).expect("corpus parses");
        let deep = match &ev.body {
            Body::RegionEnter(r) | Body::RegionLeave { region: r, .. } => r.nesting > 2,
            Body::Data { nesting, .. } | Body::DataJson { nesting, .. } => *nesting > 2,
            _ => false,
        };
        if !deep {
            v.push(rec.bytes.to_vec());
        }
    }
    (format, v)
}

/// Masks the columns that may differ (see the module docs).
fn mask(line: &[u8], format: Format, mask_t_abs: bool) -> Vec<u8> {
    let mut l = line.to_vec();
    let brief = matches!(
        format,
        Format::Perf { brief: true } | Format::Normal { brief: true }
    );
    if !brief && l.len() >= 15 {
        l[..15].fill(b'#');
    }
    if mask_t_abs {
        if let Format::Perf { brief } = format {
            // t_abs is the 6th (brief: 5th) ' | '-separated column.
            let skip = if brief { 4 } else { 5 };
            let mut seps = memchr::memmem::find_iter(line, b" | ");
            if let (Some(a), Some(b)) = (seps.nth(skip - 1), None::<usize>.or_else(|| seps.next()))
            {
                l[a + 3..b].fill(b'#');
            }
        }
    }
    // Dots beyond the nesting limit (2 regions = 4 dots) are unknowable
    // from EVENT.
    if let Format::Perf { brief } = format {
        let cols = if brief { 7 } else { 8 };
        if let Some(p) = memchr::memmem::find_iter(line, b" | ").nth(cols - 1) {
            let start = p + 3;
            let dots = l[start..].iter().take_while(|&&c| c == b'.').count();
            if dots > 4 {
                l.drain(start + 4..start + dots);
            }
        }
    }
    l
}

fn compare(corpus: &str, target_name: &str, file: &str) {
    std::env::set_var("TZ", "UTC");
    let mut failures = Vec::new();
    let mut compared = 0;
    for case in cases(corpus) {
        let (format, want) = expected(&case.join(file));
        let got = convert(&case.join("event.jsonl"), format);
        if got.len() != want.len() {
            failures.push(format!(
                "{}: {} lines converted, {} expected",
                case.display(),
                got.len(),
                want.len()
            ));
        }
        const WINDOW: usize = 64;
        let mut used = vec![false; want.len()];
        for (i, g) in got.iter().enumerate() {
            let mask_abs = !g.had_t_abs;
            let gm = mask(&g.text, format, mask_abs);
            compared += 1;
            let lo = i.saturating_sub(WINDOW);
            let hi = (i + WINDOW).min(want.len());
            let case_name = case.file_name().unwrap_or_default().to_string_lossy();
            let unknowable = matches!(format, Format::Perf { .. })
                && UNKNOWABLE_DOTS.contains(&(&*case_name, g.line));
            let same = |w: &[u8]| {
                let wm = mask(w, format, mask_abs);
                if unknowable {
                    without_dots(&wm) == without_dots(&gm) && wm != gm
                } else {
                    wm == gm
                }
            };
            let found = (lo..hi).find(|&j| !used[j] && same(&want[j]));
            match found {
                Some(j) => used[j] = true,
                None => {
                    failures.push(format!(
                        "{} {target_name} record {} ({:?}) has no match nearby:\n  got:  {}\n  want: {}",
                        case.file_name().unwrap_or_default().to_string_lossy(),
                        i + 1,
                        g.kind,
                        String::from_utf8_lossy(&g.text),
                        want.get(i).map(|w| String::from_utf8_lossy(w).into_owned()).unwrap_or_default()
                    ));
                    if failures.len() > 15 {
                        break;
                    }
                }
            }
        }
    }
    assert!(compared > 500, "too few records compared: {compared}");
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn event_to_perf_equals_git_perf_2_47() {
    compare(CORPORA[0], "perf", "perf.log");
}

#[test]
fn event_to_normal_equals_git_normal_2_47() {
    compare(CORPORA[0], "normal", "normal.log");
}

#[test]
fn event_to_perf_equals_git_perf_2_39() {
    compare(CORPORA[1], "perf", "perf.log");
}

#[test]
fn event_to_normal_equals_git_normal_2_39() {
    compare(CORPORA[1], "normal", "normal.log");
}

/// Brief EVENT keeps `time` only on `version` and `atexit`, and has no
/// file:line: converted to the full PERF/NORMAL variant, the first record
/// without a time of day is an error naming the field, never a made-up
/// `00:00:00.000000`.
#[test]
fn brief_event_to_full_variant_fails_naming_the_field() {
    for corpus in CORPORA {
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/corpus")
            .join(corpus)
            .join("12-brief/event.jsonl");
        let data = std::fs::read(&file).expect("read");
        for target in [
            Format::Perf { brief: false },
            Format::Normal { brief: false },
        ] {
            let mut conv = Converter::new(target);
            let mut out = Vec::new();
            let mut errors = Vec::new();
            for rec in RecordIter::new(&data, Format::Event) {
                let ev = Format::Event.parse(rec.bytes).expect("parses");
                if let Err(e) = conv.write(&ev, &mut out) {
                    assert!(e.message.contains(&format!("'{}'", e.field)), "{e}");
                    errors.push((rec.line, e.field));
                }
            }
            // The version record has a time but no file:line; the others
            // have neither, except atexit (time only). Every record fails.
            assert_eq!(errors.first(), Some(&(1, "file")), "{corpus} {target:?}");
            assert_eq!(errors.get(1), Some(&(2, "time")), "{corpus} {target:?}");
            assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
            // Every record the brief variant shows fails in the full one.
            let brief = match target {
                Format::Perf { .. } => Format::Perf { brief: true },
                _ => Format::Normal { brief: true },
            };
            let shown = convert(&file, brief).len();
            assert_eq!(errors.len(), shown, "{corpus} {target:?}");
            assert!(!String::from_utf8_lossy(&out).contains("00:00:00.000000"));
        }
    }
}

/// PERF -> NORMAL equals git's own NORMAL, time of day aside (each target
/// samples the clock itself) and file names longer than PERF's column, on
/// both git versions: the records' own file:line are copied, signal/atexit
/// get NORMAL's target line of the release named by PERF's `version`
/// record (PERF has no SID).
#[test]
fn perf_to_normal_equals_git_normal_on_both_versions() {
    let mut compared = 0;
    for corpus in CORPORA {
        for case in cases(corpus) {
            let data = std::fs::read(case.join("perf.log")).expect("read");
            let format = detect(&data).expect("format");
            let Format::Perf { brief } = format else {
                panic!("{}: not PERF", case.display())
            };
            let want = std::fs::read(case.join("normal.log")).expect("read");
            let mut conv = Converter::new(Format::Normal { brief });
            let mut got = Vec::new();
            for rec in RecordIter::new(&data, format) {
                let ev = format.parse(rec.bytes).expect("parses");
                conv.write(&ev, &mut got).expect("converts");
            }
            // PERF's file:line column keeps the last 25 bytes behind "..."
            // of a longer one: compare that much of NORMAL's (the rest is
            // not in the input; the converter copies the column as read).
            let masked = |b: &[u8]| -> Vec<Vec<u8>> {
                b.split(|&c| c == b'\n')
                    .map(|l| {
                        if brief || l.len() <= 16 || l[2] != b':' {
                            return l.to_vec();
                        }
                        let rest = &l[16..];
                        let end = rest.iter().position(|&c| c == b' ').unwrap_or(rest.len());
                        let (loc, msg) = rest.split_at(end);
                        let loc = loc.strip_prefix(b"...").unwrap_or(loc);
                        let tail = &loc[loc.len().saturating_sub(25)..];
                        let msg = &msg[msg.iter().take_while(|&&c| c == b' ').count()..];
                        [tail, b" ", msg].concat()
                    })
                    .collect()
            };
            // Concurrent processes interleave differently in each target's
            // file: compare as multisets (every line matches exactly one).
            let (mut got, mut want) = (masked(&got), masked(&want));
            got.sort();
            want.sort();
            compared += want.len();
            let missing: Vec<_> = want.iter().filter(|w| !got.contains(w)).take(3).collect();
            let extra: Vec<_> = got.iter().filter(|g| !want.contains(g)).take(3).collect();
            assert!(
                got == want,
                "{}: missing {:?}\n extra {:?}",
                case.display(),
                missing
                    .iter()
                    .map(|l| String::from_utf8_lossy(l))
                    .collect::<Vec<_>>(),
                extra
                    .iter()
                    .map(|l| String::from_utf8_lossy(l))
                    .collect::<Vec<_>>()
            );
        }
    }
    assert!(compared > 2000, "{compared}");
}

/// git unwinds the open regions before `atexit` (`tr2main_atexit_handler`
/// calls `tr2tls_pop_unwind_self()`): in 24-maintenance-detach the
/// daemonising parent exits inside `maintenance/detach`, so git's PERF
/// shows its `exit` with dots and its `atexit` without. The commit session
/// up to that `atexit` (event.jsonl lines 1-42), converted, ends with the
/// same two lines as git's perf.log.
#[test]
fn detached_parents_atexit_has_no_dots() {
    std::env::set_var("TZ", "UTC");
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/corpus/trace2/24-maintenance-detach");
    let event = std::fs::read(case.join("event.jsonl")).expect("read");
    let end = event
        .iter()
        .enumerate()
        .filter(|(_, &c)| c == b'\n')
        .nth(41)
        .map(|(i, _)| i + 1)
        .expect("42 lines");
    let mut conv = Converter::new(Format::Perf { brief: false });
    let mut got = Vec::new();
    for rec in RecordIter::new(&event[..end], Format::Event) {
        let ev = Format::Event.parse(rec.bytes).expect("parses");
        conv.write(&ev, &mut got).expect("converts");
    }
    let got = String::from_utf8(got).expect("utf8");
    let got: Vec<&str> = got.lines().rev().take(2).collect();
    assert!(
        got[0].ends_with("| atexit       |     |  0.019206 |           |              | code:0"),
        "{}",
        got[0]
    );
    assert!(
        got[1].ends_with("| exit         |     |  0.019051 |           |              | ..code:0"),
        "{}",
        got[1]
    );
    // git's own lines, time of day aside.
    let perf = std::fs::read_to_string(case.join("perf.log")).expect("read");
    let lines: Vec<&str> = perf.lines().collect();
    let exit = lines
        .iter()
        .position(|l| l.contains("setup.c:1998"))
        .expect("the parent's exit");
    assert_eq!(&lines[exit][15..], &got[1][15..]);
    assert_eq!(&lines[exit + 1][15..], &got[0][15..]);
}
