#!/bin/bash
# tracekit record mem vs heaptrack vs valgrind memcheck on alloc_bench, plus
# post-processing throughput. Prints CPU time (user+sys) per configuration,
# the added CPU per allocation, the ratios, and the leak totals.
#
#   usage: bench/rtrace.sh [DIR]      (default ./bench-data; writes DIR/rtrace-tk/)
#   env:   N=2000000 allocations, T=4 threads, TRACEKIT=path/to/tracekit (release)
#          SKIP_PEERS=1 to run only plain and tracekit
#          REPS=3 runs of each configuration; the run with the median CPU time
#          is shown (single runs on a shared 2-core machine swing by +-25 %)
#          TRACEKIT_BASE=path/to/other/tracekit adds a row for a second build
#          (before/after comparisons of the recorder on the same machine)
#
# `record mem` time includes everything: the shim in the program, the
# recorder's thread reading the POSIX trace stream while it runs, and the
# conversion to the text protocol afterwards.
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
D=${1:-./bench-data}/rtrace-tk
mkdir -p "$D"
D=$(cd "$D" && pwd)
N=${N:-2000000}
T=${T:-4}
REPS=${REPS:-3}
TK=${TRACEKIT:-$HERE/target/release/tracekit}
if [ ! -x "$TK" ]; then
  (cd "$HERE" && cargo build --release -p tracekit) >&2 || exit 1
fi
SRC=$HERE/bench/inputs/rtrace/alloc_bench.c
[ -f "$SRC" ] || SRC=${ALLOC_BENCH_C:?set ALLOC_BENCH_C to alloc_bench.c}
gcc -O2 -g -fno-omit-frame-pointer -pthread -o "$D/alloc_bench" "$SRC" || exit 1

cpu() {  # cpu NAME CMD... : runs REPS times, prints "NAME cpu wall rss" of the median-CPU run
  local name=$1 i; shift
  : > "$D/$name.runs"
  for ((i = 0; i < REPS; i++)); do
    /usr/bin/time -f "%U %S %e %M" -o "$D/$name.time" "$@" > "$D/$name.out" 2> "$D/$name.err"
    tail -1 "$D/$name.time" | awk '{printf "%.2f %.2f %d\n", $1+$2, $3, $4}' >> "$D/$name.runs"
  done
  sort -n "$D/$name.runs" | awk -v n="$name" -v r="$REPS" 'NR == int((r + 1) / 2) {print n, $0}'
}

{
  cpu plain "$D/alloc_bench" "$N" "$T"
  rm -f "$D/tk.rtrace"
  # The whole `record mem`: the traced program plus the conversion of its
  # binary events to the text protocol afterwards.
  cpu tracekit "$TK" record mem -o "$D/tk.rtrace" -- "$D/alloc_bench" "$N" "$T"
  if [ -n "${TRACEKIT_BASE:-}" ]; then
    cpu tracekit_base "$TRACEKIT_BASE" record mem -o "$D/tk_base.rtrace" -- "$D/alloc_bench" "$N" "$T"
  fi
  if [ "${SKIP_PEERS:-0}" != 1 ]; then
    cpu heaptrack heaptrack -o "$D/ht" "$D/alloc_bench" "$N" "$T"
    cpu heaptrack_raw heaptrack -r -o "$D/htraw" "$D/alloc_bench" "$N" "$T"
    cpu memcheck valgrind --run-libc-freeres=no --leak-check=full --log-file="$D/memcheck.log" "$D/alloc_bench" "$N" "$T"
  fi
  cpu postproc_leaks "$TK" rtrace postproc -l "$D/tk.rtrace" -o "$D/tk.leaks"
  cpu postproc_plain "$TK" rtrace postproc "$D/tk.rtrace" -o /dev/null
  cpu report "$TK" report "$D/tk.rtrace" -o "$D/tk.report"
} | tee "$D/cpu.txt"

# Descriptors: fd_bench under tracekit (memory+file) and memcheck --track-fds.
FN=${FN:-20000}
FSRC=$(dirname "$SRC")/fd_bench.c
if [ -f "$FSRC" ]; then
  gcc -O2 -g -fno-omit-frame-pointer -o "$D/fd_bench" "$FSRC" || exit 1
  mkdir -p "$D/scratch"
  cpu fd_plain "$D/fd_bench" "$FN" 1000 "$D/scratch" >> "$D/cpu.txt"
  cpu fd_tracekit "$TK" record mem --modules memory,file -o "$D/fd.rtrace" -- "$D/fd_bench" "$FN" 1000 "$D/scratch" >> "$D/cpu.txt"
  "$TK" rtrace postproc -l "$D/fd.rtrace" -o "$D/fd.leaks"
  if [ "${SKIP_PEERS:-0}" != 1 ]; then
    cpu fd_memcheck valgrind --run-libc-freeres=no --track-fds=yes --log-file="$D/fd_memcheck.log" "$D/fd_bench" "$FN" 1000 "$D/scratch" >> "$D/cpu.txt"
  fi
  echo "fd_bench $FN iterations, never released (tracekit):"
  grep -A1 "^# Resource" "$D/fd.leaks" | grep -v "^--"
  [ -f "$D/fd_memcheck.log" ] && grep -E "FILE DESCRIPTORS|in use at exit|inherited" "$D/fd_memcheck.log" | sort | uniq -c
fi

python3 - "$D" "$N" <<'PY'
import sys, os, re
d, n = sys.argv[1], int(sys.argv[2])
rows = {}
for line in open(os.path.join(d, "cpu.txt")):
    name, cpu, wall, rss = line.split()
    rows[name] = (float(cpu), float(wall), int(rss))
plain = rows["plain"][0]
print()
print(f"{'configuration':<16} {'CPU s':>7} {'wall s':>7} {'max RSS MB':>10} {'added CPU/alloc':>16} {'vs tracekit':>12}")
tk = rows["tracekit"][0] - plain
for name in ("plain", "tracekit", "tracekit_base", "heaptrack", "heaptrack_raw", "memcheck"):
    if name not in rows: continue
    if name.startswith("fd_"): continue
    c, w, r = rows[name]
    add = (c - plain) / n * 1e6
    ratio = f"{(c - plain) / tk:.2f}x" if name not in ("plain", "tracekit") and tk > 0 else ""
    print(f"{name:<16} {c:7.2f} {w:7.2f} {r/1024:10.1f} {add if name != 'plain' else 0:13.3f} us {ratio:>12}")
def inprog(name):
    try:
        m = re.search(r"ns_per_alloc=([0-9.]+)", open(os.path.join(d, name + ".out")).read())
        return float(m.group(1)) if m else None
    except OSError:
        return None
base = inprog("plain")
print()
print("in-program ns per allocation (wall, noisy on shared machines):")
for name in ("plain", "tracekit", "tracekit_base", "heaptrack", "heaptrack_raw", "memcheck"):
    v = inprog(name)
    if v is not None and base:
        print(f"  {name:<14} {v:9.1f} ns  (+{v - base:.1f} ns, {v / base:.1f}x)")
size = os.path.getsize(os.path.join(d, "tk.rtrace"))
for name in ("postproc_leaks", "postproc_plain", "report"):
    c, w, r = rows[name]
    print(f"{name:<16} {c:7.2f} {w:7.2f} {r/1024:10.1f}   {size/1e6/c:8.0f} MB/s per CPU-second ({size/1e6:.0f} MB text)")
# What the recorder said (stream full and waited, events lost).
for l in open(os.path.join(d, "tracekit.err")):
    print("record mem:", l.rstrip())
leak = open(os.path.join(d, "tk.leaks")).read()
m = re.findall(r"# (\d+) block\(s\) leaked with total size of (\d+) bytes", leak)
print("tracekit never freed:", m)
import glob, subprocess
for f in sorted(glob.glob(os.path.join(d, "ht.*zst")))[:1]:
    try:
        out = subprocess.run(["heaptrack_print", "-f", f, "-p", "0", "-a", "0", "-T", "0", "-l", "0"],
                             capture_output=True, text=True).stdout
        for l in out.splitlines():
            if "leaked" in l: print("heaptrack:", l.strip())
    except OSError:
        pass
mc = os.path.join(d, "memcheck.log")
if os.path.exists(mc):
    for l in open(mc):
        if "in use at exit" in l: print("memcheck:", l.strip())
PY
