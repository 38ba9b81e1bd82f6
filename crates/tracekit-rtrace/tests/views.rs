//! The report's views on small hand-made traces whose answers are known:
//! peak consumers at the moment of the peak, temporary allocations, the
//! largest allocations, a diff that matches backtraces across runs whose
//! addresses differ, and the heaptrack file written for them.

use tracekit_rtrace::heaptrack;
use tracekit_rtrace::report::{self, Metric, Symbolise};

const HEADER: &str = "version=2.0, arch=x86_64, timestamp=2026.1.1 00:00:00, process=/bin/app, pid=7, backtrace depth=10, origin=tracekit 0.1.0, \n<1> : memory (memory allocation in bytes)\n";

/// A trace from `calls`: `+size@site`, `-n` (free the block of the n-th
/// allocation), one millisecond apart; site k's backtrace is
/// `base+k, base+0x100`.
fn trace(calls: &[&str], base: u64) -> String {
    let mut s = HEADER.to_string();
    let mut ids = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let ts = format!("[00:00:01.{:03}]", i);
        if let Some(rest) = c.strip_prefix('+') {
            let (size, site) = rest.split_once('@').unwrap();
            let id = 0x1000 + 0x100 * ids.len() as u64;
            ids.push(id);
            let site: u64 = site.parse().unwrap();
            s += &format!(
                "{}. {ts} malloc({size}) = 0x{id:x}\n\t0x{:x}\n\t0x{:x}\n\n",
                i + 1,
                base + site,
                base + 0x100
            );
        } else if *c == "-null" {
            s += &format!("{}. {ts} free(0x0)\n\n", i + 1);
        } else if let Some(id) = c.strip_prefix("-0x") {
            // A block never seen allocated.
            s += &format!("{}. {ts} free(0x{id})\n\n", i + 1);
        } else {
            let n: usize = c[1..].parse().unwrap();
            s += &format!("{}. {ts} free(0x{:x})\n\n", i + 1, ids[n]);
        }
    }
    s
}

fn cost_of(rep: &report::Report, m: Metric, function: &str) -> Option<i64> {
    rep.view(0, m, 100)
        .into_iter()
        .find(|(l, _)| l.function == function)
        .map(|(l, _)| l.cost.get(m))
}

#[test]
fn peak_consumers_are_counted_at_the_peak() {
    // Site 1: 100 live throughout; site 2: 300 allocated then freed (the
    // peak, 400, is while it lives); site 3: 250 after that (total 350),
    // then site 2 again: 50 (400 again, not above the peak).
    let t = trace(&["+100@1", "+300@2", "-1", "+250@3", "+50@2"], 0x400000);
    let rep = report::analyse(t.as_bytes(), 10, false).unwrap();
    let mem = &rep.resources[0];
    assert_eq!(
        (mem.peak_bytes, mem.peak_blocks, mem.peak_at_index),
        (400, 2, 2)
    );
    assert_eq!(cost_of(&rep, Metric::Peak, "0x400001"), Some(100));
    assert_eq!(cost_of(&rep, Metric::Peak, "0x400002"), Some(300));
    assert_eq!(cost_of(&rep, Metric::Peak, "0x400003"), None);
    // The per-place peaks add up to the peak.
    let sum: i64 = rep
        .view(0, Metric::Peak, 100)
        .iter()
        .map(|(l, _)| l.cost.peak)
        .sum();
    assert_eq!(sum, mem.peak_bytes);
    assert_eq!(cost_of(&rep, Metric::Largest, "0x400002"), Some(300));
    assert_eq!(cost_of(&rep, Metric::Leaked, "0x400003"), Some(250));
    assert_eq!(mem.leaked_bytes, 100 + 250 + 50);
    assert_eq!(rep.runtime_ms, Some(4));
}

#[test]
fn a_later_higher_peak_replaces_the_earlier_one() {
    let t = trace(&["+100@1", "-0", "+50@2", "+60@3", "-2"], 0x400000);
    let rep = report::analyse(t.as_bytes(), 10, false).unwrap();
    assert_eq!(rep.resources[0].peak_bytes, 110);
    assert_eq!(cost_of(&rep, Metric::Peak, "0x400001"), None);
    assert_eq!(cost_of(&rep, Metric::Peak, "0x400002"), Some(50));
    assert_eq!(cost_of(&rep, Metric::Peak, "0x400003"), Some(60));
}

#[test]
fn temporary_means_freed_by_the_very_next_call() {
    // 0 freed at once (temporary); 1 freed after another allocation (not);
    // 3 freed at once (temporary).
    let t = trace(
        &["+10@1", "-0", "+20@1", "+30@2", "-1", "+40@1", "-3"],
        0x400000,
    );
    let rep = report::analyse(t.as_bytes(), 10, false).unwrap();
    assert_eq!(rep.resources[0].temporary, 2);
    assert_eq!(cost_of(&rep, Metric::Temporary, "0x400001"), Some(2));
    assert_eq!(cost_of(&rep, Metric::Temporary, "0x400002"), None);
}

/// `free(NULL)` does nothing: counted apart, not as a free of an unknown
/// block, and (like a free of an unknown block, which heaptrack drops
/// before it looks for temporaries) it does not end the run that makes
/// the next release of the last allocation temporary.
#[test]
fn free_of_null_is_not_an_unknown_block_nor_a_call_between() {
    let t = trace(
        &[
            "+10@1", "-null", "-0", "+20@1", "-0xdead", "-null", "-1", "-null",
        ],
        0x400000,
    );
    let rep = report::analyse(t.as_bytes(), 10, false).unwrap();
    let r = &rep.resources[0];
    assert_eq!((r.frees, r.null_frees, r.unmatched_frees), (6, 3, 1));
    assert_eq!(r.temporary, 2);
    let mut text = Vec::new();
    rep.write_text(&mut text, "t").unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("frees 6 (1 of unknown blocks, 3 free(NULL))"),
        "{text}"
    );
    assert!(text.contains("\n  backtrace depth 10\n"), "{text}");
    // Not in a heaptrack file (it records none), not an unknown block.
    let mut out = Vec::new();
    let stats = heaptrack::convert(t.as_bytes(), &mut out, &Symbolise::none()).unwrap();
    assert_eq!((stats.null_frees, stats.unmatched_frees), (3, 1));
}

#[test]
fn diff_matches_backtraces_by_name_not_address() {
    // Without module files frames are named by address, so give both runs
    // the same addresses but different costs; and a run at other
    // addresses shares nothing.
    let a = trace(&["+100@1", "+100@2", "-1"], 0x400000);
    let b = trace(&["+100@1", "+100@1", "+100@2"], 0x400000);
    let ra = report::analyse(a.as_bytes(), 10, false).unwrap();
    let rb = report::analyse(b.as_bytes(), 10, false).unwrap();
    let d = report::diff(&ra, &rb, 10);
    assert_eq!(d.totals[0].allocations, 1);
    assert_eq!(d.totals[0].leaked, 200);
    let grew: Vec<(String, i64)> = d
        .locations
        .iter()
        .map(|l| (l.function.clone(), l.cost.leaked))
        .collect();
    assert_eq!(
        grew,
        [("0x400001".to_string(), 100), ("0x400002".to_string(), 100)]
    );
    assert!(report::diff(&ra, &ra, 10).traces.is_empty());
    let mut text = Vec::new();
    d.write_text(&mut text, "a", "b").unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("allocations +1 (+100 B), peak +100 B"),
        "{text}"
    );
}

#[test]
fn heaptrack_file_of_a_small_trace() {
    let t = trace(&["+100@1", "+300@2", "-1", "-0", "+16@1"], 0x400000);
    let mut t = t.replace(
        "2. [00:00:01.001]",
        "9. [00:00:01.001] free(0x999)\n\n2. [00:00:01.001]",
    );
    t += "10. fopen<fp>(1) = 0x5\n\n";
    let mut out = Vec::new();
    let stats = heaptrack::convert(t.as_bytes(), &mut out, &Symbolise::none()).unwrap();
    let text = String::from_utf8(out).unwrap();
    // One trace tree: the shared outer frame once, both sites under it;
    // (size, trace) pairs once; times in ms since the first call.
    assert_eq!(
        text,
        "v 0 3\nX /bin/app\n\
         i 400100 0\nt 1 0\ni 400001 0\nt 2 1\na 64 2\n+ 0\n\
         c 1\ni 400002 0\nt 3 1\na 12c 3\n+ 1\n\
         c 2\n- 1\nc 3\n- 0\nc 4\na 10 2\n+ 2\n\
         # strings: 0\n# ips: 3\n"
    );
    assert_eq!((stats.allocations, stats.frees), (3, 2));
    assert_eq!(stats.unmatched_frees, 1);
    assert_eq!(stats.other_resources, 1);
}

#[test]
fn flame_graphs_carry_every_byte_and_call() {
    let t = trace(&["+100@1", "+300@2", "-1", "+250@3"], 0x400000);
    let rep = report::analyse(t.as_bytes(), 10, false).unwrap();
    let sum = |m: Metric| -> u64 {
        String::from_utf8(rep.folded(m))
            .unwrap()
            .lines()
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(sum(Metric::Allocated), 650);
    assert_eq!(sum(Metric::Allocations), 3);
    assert_eq!(sum(Metric::Leaked), 350);
    let folded = String::from_utf8(rep.folded(Metric::Allocated)).unwrap();
    assert!(
        folded.contains("memory;0x400100;0x400002 300\n"),
        "{folded}"
    );
    let mut svg = Vec::new();
    rep.write_flamegraph(Metric::Allocations, &mut svg).unwrap();
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.contains("Allocation calls by backtrace"));
    let mut plot = Vec::new();
    rep.write_timeline_svg(&mut plot).unwrap();
    let plot = String::from_utf8(plot).unwrap();
    assert!(plot.contains(">seconds</text>"), "{plot}");
}

#[test]
fn the_recorders_notes_reach_the_report() {
    // Permanent comments of the recorder (`## tracekit: …`): how the
    // program ended, what could not be recorded. Other comments are not
    // notes.
    let mut t = trace(&["+100@1"], 0x400000);
    t += "## tracekit: 2 event(s) of this process were lost while recording\n## heap status\n";
    let rep = report::analyse(t.as_bytes(), 10, false).unwrap();
    assert_eq!(
        rep.notes,
        ["2 event(s) of this process were lost while recording"]
    );
    let mut text = Vec::new();
    rep.write_text(&mut text, "t").unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("\n  2 event(s) of this process were lost while recording\n"),
        "{text}"
    );
    assert_eq!(rep.to_json("t")["notes"][0], rep.notes[0]);
}
