#!/usr/bin/env bash
# POSIX trace engine speed, beside the LTTng-UST / babeltrace2 baseline.
#
#   bench/posix.sh [--quick]
#   bench/posix.sh --callgrind
#
# Runs the criterion benches of crates/tracekit-posix (benches/posix.rs):
# posix_trace_event with a 32-byte payload on a running stream, with the
# event type filtered out, from two threads at once, and reading a
# 2 M-event trace log with posix_trace_getnext_event. Prints our medians
# next to the figures measured on this machine class for LTTng-UST and
# babeltrace2 (bench/inputs/BASELINES.md, section "POSIX tracing";
# regenerate those with bench/inputs/posix/make_traces.sh and peers.sh).
#
# "cpu" rows use the benchmark thread's CPU time: on the shared 2-core
# machine wall time mostly measures the other jobs (the README's baseline
# also favours CPU time for the same reason). Wall-time rows are printed too.
# The last column is how many times faster tracekit is than the peer's
# range (peer time / ours, or our rate / peer's).
set -euo pipefail
cd "$(dirname "$0")/.."
# Absolute: cargo runs the bench from the crate's directory, where a
# relative target directory would put criterion's results somewhere else
# (that made every figure n/a).
CARGO_TARGET_DIR=$(realpath -m "${CARGO_TARGET_DIR:-target}")
export CARGO_TARGET_DIR
export CRITERION_HOME="$CARGO_TARGET_DIR/criterion"
rm -rf "$CRITERION_HOME/posix_trace_event" "$CRITERION_HOME/log read"
ARGS=(--warm-up-time 2 --measurement-time 5)

# --callgrind: instructions per posix_trace_event (32 B, running LOOP
# stream; type filtered out), the figure that does not depend on the
# machine's load: callgrind's count for N + 1 M events minus N, over 1 M
# (examples/event_loop.rs; the loop's own few instructions included).
if [ "${1:-}" = --callgrind ]; then
  cargo build -q --profile bench -p tracekit-posix --example event_loop
  BIN="$CARGO_TARGET_DIR/release/examples/event_loop"
  ir() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$BIN" "$@" 2>&1 |
      sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
  }
  for mode in running filtered; do
    a=$(ir 100000 $mode) b=$(ir 1100000 $mode)
    echo "posix_trace_event, 32 B, $mode: $(( (b - a) / 1000000 )) instructions per event (callgrind)"
  done
  exit 0
fi
[ "${1:-}" = --quick ] && ARGS=(--warm-up-time 1 --measurement-time 2)

README=bench/inputs/BASELINES.md
if [ -f "$README" ] && ! grep -q 'Enabled, `small` event, best 50 k-event batch of 40 | \*\*133\*\*' "$README"; then
  echo "note: $README changed; check the baseline figures below against it" >&2
fi

echo "running cargo bench -p tracekit-posix --bench posix (a few minutes) ..." >&2
cargo bench -q -p tracekit-posix --bench posix -- "${ARGS[@]}" >/dev/null 2>&1 || {
  echo "cargo bench failed; rerun without -q to see why" >&2; exit 1; }

python3 - "$CRITERION_HOME" <<'PY'
import json, os, sys
root = sys.argv[1]
med = {}
for d, _, files in os.walk(root):
    if d.endswith("/new") and "estimates.json" in files and "benchmark.json" in files:
        b = json.load(open(os.path.join(d, "benchmark.json")))
        e = json.load(open(os.path.join(d, "estimates.json")))
        med[b["full_id"]] = e["median"]["point_estimate"]  # ns per iteration

def ns(key):
    v = med.get(key)
    return "n/a" if v is None else f"{v:.1f} ns"

def evs(key, n=2_000_000):
    v = med.get(key)
    return "n/a" if v is None else f"{n / v * 1e3:.1f} M ev/s"

E = "posix_trace_event/"
single = med.get(E + "32B running (cpu)")
two = med.get(E + "32B two threads at once (cpu, per event per thread)")

def faster_ns(key, lo, hi):
    """Peer's time range over ours."""
    v = med.get(key)
    return "n/a" if not v else f"{lo / v:.1f}-{hi / v:.1f}x"

def faster_rate(key, lo, hi, n=2_000_000):
    """Our rate over the peer's range (events/s per CPU-second)."""
    v = med.get(key)
    if not v:
        return "n/a"
    ours = n / v * 1e3  # M ev/s
    return f"{ours / hi:.0f}-{ours / lo:.0f}x"

GETNEXT = "log read/getnext_event, 2M events of 32 B (cpu)"
ZEROCOPY = "log read/LogReader::next_event zero-copy, 2M events (cpu)"
rows = [
    ("posix_trace_event, 32 B, running (CPU)", ns(E + "32B running (cpu)"),
     "LTTng-UST 133-163 ns best case (small/mixed event)", "<= 27 ns",
     faster_ns(E + "32B running (cpu)", 133, 163)),
    ("  same, wall time", ns(E + "32B running"), "(LTTng mean with consumer: 250-470 ns)", "", ""),
    ("posix_trace_event, type filtered out (CPU)", ns(E + "32B filtered out (cpu)"),
     "LTTng-UST disabled tracepoint 0.35-1.1 ns", "<= 3 ns",
     faster_ns(E + "32B filtered out (cpu)", 0.35, 1.1)),
    ("  same, wall time", ns(E + "32B filtered out"), "", "", ""),
    ("two threads at once, per event per thread (CPU)", ns(E + "32B two threads at once (cpu, per event per thread)"),
     "-", "<= 2x single thread" + (f" (here {two / single:.2f}x)" if single and two else ""), ""),
    ("clock read (rdtsc or clock_gettime, CPU)", ns(E + "clock read (cpu)"), "clock_gettime ~27 ns", "", ""),
    ("log read, posix_trace_getnext_event (CPU)", evs(GETNEXT),
     "babeltrace2 decode only 1.2-1.8 M ev/s per CPU-s", ">= 40 M ev/s",
     faster_rate(GETNEXT, 1.2, 1.8)),
    ("log read, zero-copy LogReader (CPU)", evs(ZEROCOPY),
     "babeltrace2 CTF->text 0.225-0.47 M ev/s", "", faster_rate(ZEROCOPY, 0.225, 0.47)),
]
w = max(len(r[0]) for r in rows)
print(f"{'measure':<{w}}  {'tracekit':>14}  {'baseline (bench/inputs/BASELINES.md)':<52}  {'target':<28}  faster")
for r in rows:
    print(f"{r[0]:<{w}}  {r[1]:>14}  {r[2]:<52}  {r[3]:<28}  {r[4]}")
PY
