#!/bin/bash
# tracekit record mem vs heaptrack (-r and full) vs valgrind memcheck on
# alloc_bench, built twice: plain -O2 (no frame pointers, as Debian and most
# release builds) and -O2 -fno-omit-frame-pointer. Runs alternate between the
# configurations (paired: the machine's load hits them alike), REPS rounds;
# prints per configuration the median CPU time (user+sys of the whole process
# tree), the median peak resident memory (the largest process of the tree:
# GNU time's %M), the added CPU per allocation, the ratio to heaptrack -r,
# and the frames per allocation each tool recorded. Then post-processing
# throughput and the descriptor benchmark.
#
#   usage: bench/rtrace.sh [DIR]      (default ./bench-data; writes DIR/rtrace-tk/)
#   env:   N=2000000 allocations, T=4 threads, REPS=5 rounds (median shown)
#          DEPTH=N passes --backtrace-depth N to every tracekit row (default:
#          record mem's, whole stacks up to 64 frames); DEPTH_ROWS="10" adds
#          a tracekit row per listed depth (tracekit_d10, ...), side by side
#          RECORD_MEM=path/to/record_mem example (cargo build --release -p
#          tracekit-rtrace --example record_mem): times it instead of the CLI
#          for the record rows (the same recorder without the SQL engine)
#          TRACEKIT=path/to/tracekit (release; built if missing)
#          SKIP_PEERS=1 runs only plain and tracekit; SKIP_MEMCHECK=1 skips valgrind
#          BUILDS="nofp fp" (either or both)
#          TRACEKIT_BASE=path/to/other/tracekit adds a row for a second build
#
# `record mem` time includes everything: the shim in the program, the
# recorder's thread reading the POSIX trace stream while it runs, and the
# conversion to the sp-rtrace text protocol afterwards (the text file is
# written to DIR). `record mem --raw` (row tracekit_raw) keeps the binary
# recording and converts nothing, like heaptrack -r, which writes its raw
# trace through zstd and resolves nothing; the deferred work is measured
# too: `rtrace decode` of that raw file to text (row raw_decode), and
# raw+decode (the sum of the medians, comparable to the default mode).
# heaptrack also runs heaptrack_interpret (symbols).
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
D=${1:-./bench-data}/rtrace-tk
mkdir -p "$D"
D=$(cd "$D" && pwd)
N=${N:-2000000}
T=${T:-4}
REPS=${REPS:-5}
BUILDS=${BUILDS:-nofp fp}
TK=${TRACEKIT:-$HERE/target/release/tracekit}
if [ ! -x "$TK" ]; then
  (cd "$HERE" && cargo build --release -p tracekit) >&2 || exit 1
fi
SRC=$HERE/bench/inputs/rtrace/alloc_bench.c
[ -f "$SRC" ] || SRC=${ALLOC_BENCH_C:?set ALLOC_BENCH_C to alloc_bench.c}
gcc -O2 -g -pthread -o "$D/alloc_bench_nofp" "$SRC" || exit 1
gcc -O2 -g -fno-omit-frame-pointer -pthread -o "$D/alloc_bench_fp" "$SRC" || exit 1
have() { command -v "$1" > /dev/null 2>&1; }
PEERS=1
[ "${SKIP_PEERS:-0}" = 1 ] && PEERS=0
if [ $PEERS = 1 ] && ! have heaptrack; then
  echo "heaptrack not installed (apt-get install -y heaptrack): peers skipped" >&2
  PEERS=0
fi
MEMCHECK=$PEERS
[ "${SKIP_MEMCHECK:-0}" = 1 ] && MEMCHECK=0
have valgrind || MEMCHECK=0

rec() {  # rec NAME DEPTH OUTDIR [--raw] CMD... : one record mem run (see one)
  local name=$1 depth=$2 out=$3; shift 3
  local raw=()
  if [ "$1" = --raw ]; then raw=(--raw); shift; fi
  if [ -n "${RECORD_MEM:-}" ]; then
    DEPTH=$depth one "$name" "$RECORD_MEM" "${raw[@]}" "$out" "$@"
  else
    one "$name" "$TK" -q record mem ${depth:+-b "$depth"} "${raw[@]}" -o "$out" -- "$@"
  fi
}

one() {  # one NAME CMD... : one run appended to NAME.runs as "cpu wall rss"
  local name=$1; shift
  /usr/bin/time -f "%U %S %e %M" -o "$D/$name.time" "$@" > "$D/$name.out" 2> "$D/$name.err"
  tail -1 "$D/$name.time" | awk '{printf "%.3f %.2f %d\n", $1+$2, $3, $4}' >> "$D/$name.runs"
}

: > "$D/load.txt"
for b in $BUILDS; do
  for c in plain tracekit tracekit_raw raw_decode tracekit_base heaptrack_raw heaptrack memcheck; do : > "$D/${c}_$b.runs"; done
  for d in ${DEPTH_ROWS:-}; do : > "$D/tracekit_d${d}_$b.runs"; done
done
for ((r = 0; r < REPS; r++)); do
  cut -d' ' -f1-3 /proc/loadavg >> "$D/load.txt"
  for b in $BUILDS; do
    AB=$D/alloc_bench_$b
    one "plain_$b" "$AB" "$N" "$T"
    rm -rf "$D/tk_$b.mem" "$D/tkraw_$b.mem"
    rec "tracekit_$b" "${DEPTH:-}" "$D/tk_$b.mem" "$AB" "$N" "$T"
    cp "$D"/tk_$b.mem/*-0.rtrace "$D/tk_$b.rtrace"
    for d in ${DEPTH_ROWS:-}; do
      rm -rf "$D/tkd${d}_$b.mem"
      rec "tracekit_d${d}_$b" "$d" "$D/tkd${d}_$b.mem" "$AB" "$N" "$T"
      cp "$D"/tkd${d}_$b.mem/*-0.rtrace "$D/tkd${d}_$b.rtrace"
    done
    rec "tracekit_raw_$b" "${DEPTH:-}" "$D/tkraw_$b.mem" --raw "$AB" "$N" "$T"
    one "raw_decode_$b" "$TK" rtrace decode "$D"/tkraw_$b.mem/*-0.tkrt -o "$D/tkraw_$b.rtrace"
    if [ -n "${TRACEKIT_BASE:-}" ]; then
      one "tracekit_base_$b" "$TRACEKIT_BASE" record mem -o "$D/tkbase_$b.rtrace" -- "$AB" "$N" "$T"
      rm -rf "$D/tkbase_$b.rtrace"*
    fi
    if [ $PEERS = 1 ]; then
      rm -f "$D/htraw_$b".* "$D/ht_$b".*
      one "heaptrack_raw_$b" heaptrack -r -o "$D/htraw_$b" "$AB" "$N" "$T"
      one "heaptrack_$b" heaptrack -o "$D/ht_$b" "$AB" "$N" "$T"
    fi
    if [ $MEMCHECK = 1 ] && [ "$r" = 0 ]; then
      one "memcheck_$b" valgrind --run-libc-freeres=no --leak-check=full --log-file="$D/memcheck_$b.log" "$AB" "$N" "$T"
    fi
  done
done

# Post-processing the no-frame-pointer trace of the last round.
PP=$D/tk_nofp.rtrace
[ -f "$PP" ] || PP=$D/tk_fp.rtrace
for c in postproc_leaks postproc_plain report; do : > "$D/$c.runs"; done
one postproc_leaks "$TK" rtrace postproc -l "$PP" -o "$D/tk.leaks"
one postproc_plain "$TK" rtrace postproc "$PP" -o /dev/null
one report "$TK" report "$PP" -o "$D/tk.report"

# Frames per allocation: tracekit from its text trace, heaptrack from its
# flame graph stack file (every allocation's stack, weighted by count).
for b in $BUILDS; do
  for t in tk tkraw $(for d in ${DEPTH_ROWS:-}; do echo "tkd$d"; done); do
    [ -f "$D/${t}_$b.rtrace" ] || continue
    awk '/^[0-9]+\. .*\) = 0x/ {a++; inb=1; next} /^\t0x/ {if (inb) f++; next} {inb=0}
         END {if (a) printf "%.2f\n", f / a}' "$D/${t}_$b.rtrace" > "$D/frames_${t}_$b.txt"
  done
  HT=$(ls "$D"/ht_$b.*zst "$D"/ht_$b.*gz 2>/dev/null | head -1)
  if [ -n "$HT" ] && have heaptrack_print; then
    heaptrack_print -f "$HT" -p 0 -a 0 -T 0 -l 0 -F "$D/ht_$b.stacks" > /dev/null 2>&1
    awk '{n = $NF; sub(/ [0-9]+$/, ""); d = 0; k = split($0, x, ";");
          for (i = 1; i <= k; i++) if (x[i] != "") d++; s += n * d; c += n}
         END {if (c) printf "%.2f\n", s / c}' \
      "$D/ht_$b.stacks" > "$D/frames_ht_$b.txt"
  fi
done

python3 - "$D" "$N" "$BUILDS" "${DEPTH_ROWS:-}" <<'PY'
import os, statistics, sys
d, n, builds = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
extra = [f"tracekit_d{x}" for x in sys.argv[4].split()]
def runs(name):
    p = os.path.join(d, name + ".runs")
    if not os.path.exists(p): return None
    rows = [tuple(map(float, l.split())) for l in open(p) if l.strip()]
    if not rows: return None
    return (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows),
            statistics.median(r[2] for r in rows), len(rows))
def text(name):
    p = os.path.join(d, name)
    return open(p).read().strip() if os.path.exists(p) else "-"
loads = [l.split()[0] for l in open(os.path.join(d, "load.txt"))]
print(f"alloc_bench {n} allocations; load average (1 min) at each round: {' '.join(loads)}")
for b in builds:
    plain = runs("plain_" + b)
    if not plain: continue
    print(f"\n{b} build ({'-O2' if b == 'nofp' else '-O2 -fno-omit-frame-pointer'}), medians:")
    print(f"{'configuration':<16} {'CPU s':>7} {'wall s':>7} {'max RSS MB':>10} {'added CPU/alloc':>16} {'vs heaptrack -r':>16} {'frames/alloc':>13}")
    raw = runs("heaptrack_raw_" + b)
    rows = [(c, runs(f"{c}_{b}")) for c in ["plain", "tracekit"] + extra + ["tracekit_raw", "raw_decode", "tracekit_base", "heaptrack_raw", "heaptrack", "memcheck"]]
    rows = dict((c, r) for c, r in rows if r)
    if "tracekit_raw" in rows and "raw_decode" in rows:
        ra, rd = rows["tracekit_raw"], rows["raw_decode"]
        # The decode runs on its own: its CPU is all added cost.
        rows["raw+decode"] = (ra[0] + rd[0], ra[1] + rd[1], max(ra[2], rd[2]), min(ra[3], rd[3]))
    for c in ["plain", "tracekit"] + extra + ["tracekit_raw", "raw_decode", "raw+decode", "tracekit_base", "heaptrack_raw", "heaptrack", "memcheck"]:
        r = rows.get(c)
        if not r: continue
        cpu, wall, rss, k = r
        add = (cpu - (0 if c == "raw_decode" else plain[0])) / n * 1e6
        ratio = ""
        if raw and c not in ("plain", "raw_decode") and cpu > plain[0]:
            ratio = f"{(raw[0] - plain[0]) / (cpu - plain[0]):.2f}x cheaper" if c.startswith("tracekit") or c == "raw+decode" else ""
        frames = text(f"frames_tk_{b}.txt") if c == "tracekit" else text(f"frames_tkraw_{b}.txt") if c == "tracekit_raw" else text(f"frames_ht_{b}.txt") if c == "heaptrack" else text(f"frames_tkd{c[len('tracekit_d'):]}_{b}.txt") if c in extra else ""
        print(f"{c:<16} {cpu:7.2f} {wall:7.2f} {rss/1024:10.1f} {add if c != 'plain' else 0:13.3f} us {ratio:>16} {frames:>13}")
PP = os.path.join(d, "tk_nofp.rtrace")
if not os.path.exists(PP): PP = os.path.join(d, "tk_fp.rtrace")
size = os.path.getsize(PP)
print()
for c in ("postproc_leaks", "postproc_plain", "report"):
    r = runs(c)
    if r: print(f"{c:<16} {r[0]:7.2f} s CPU {r[2]/1024:7.1f} MB  {size/1e6/max(r[0], 1e-9):8.0f} MB/s per CPU-second ({size/1e6:.0f} MB text)")
for b in builds:
    p = os.path.join(d, f"tracekit_{b}.err")
    if os.path.exists(p):
        for l in open(p): print(f"record mem ({b}):", l.rstrip())
PY

# Descriptors: fd_bench under tracekit (memory+file) and memcheck --track-fds.
FN=${FN:-20000}
FSRC=$(dirname "$SRC")/fd_bench.c
if [ -f "$FSRC" ]; then
  gcc -O2 -g -o "$D/fd_bench" "$FSRC" || exit 1
  mkdir -p "$D/scratch"
  for c in fd_plain fd_tracekit fd_memcheck; do : > "$D/$c.runs"; done
  one fd_plain "$D/fd_bench" "$FN" 1000 "$D/scratch"
  rm -rf "$D/fd.mem"
  one fd_tracekit "$TK" -q record mem --modules memory,file -o "$D/fd.mem" -- "$D/fd_bench" "$FN" 1000 "$D/scratch"
  cp "$D"/fd.mem/*-0.rtrace "$D/fd.rtrace"
  "$TK" rtrace postproc -l "$D/fd.rtrace" -o "$D/fd.leaks"
  [ $MEMCHECK = 1 ] && one fd_memcheck valgrind --run-libc-freeres=no --track-fds=yes --log-file="$D/fd_memcheck.log" "$D/fd_bench" "$FN" 1000 "$D/scratch"
  for c in fd_plain fd_tracekit fd_memcheck; do
    [ -s "$D/$c.runs" ] && awk -v c=$c '{printf "%-16s %7.2f s CPU %7.1f MB\n", c, $1, $3/1024}' "$D/$c.runs"
  done
  echo "fd_bench $FN iterations, never released (tracekit):"
  grep -A1 "^# Resource" "$D/fd.leaks" | grep -v "^--"
fi
