#!/bin/bash
# The memory report side by side with heaptrack's, on recordings of the same
# run: alloc_bench making N allocations (default 10 million), recorded by
# `tracekit record mem` (a .tkmem file) and by heaptrack; then `tracekit
# report` on the .tkmem file versus `heaptrack_print` on heaptrack's file.
# Both resolve symbols (heaptrack did it while recording, in
# heaptrack_interpret; tracekit does it in the report). Prints CPU time
# (user+sys), wall time and peak RSS of the median run of each, the ratio,
# the file sizes and both tools' totals (which agree but for heaptrack's own
# libstdc++ pool, docs/memory-recording.md).
#
#   usage: bench/rtrace-report.sh [DIR]   (default ./bench-data; writes DIR/rtrace-report/)
#   env:   N=10000000 allocations, T=2 threads, REPS=3
#          TRACEKIT=path/to/tracekit (default: target/release/tracekit, built
#          if missing and neither of the next two is set)
#          RECORD_MEM=path/to/record_mem example: records with it
#          REPORT="path/to/rtrace_throughput" (cargo build --release -p
#          tracekit-rtrace --example rtrace_throughput): times its `FILE
#          report` mode (the analysis and text of `tracekit report`, symbols
#          resolved, without the CLI) instead of `tracekit report`
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
D=${1:-./bench-data}/rtrace-report
mkdir -p "$D"
D=$(cd "$D" && pwd)
N=${N:-10000000}
T=${T:-2}
REPS=${REPS:-3}
TK=${TRACEKIT:-$HERE/target/release/tracekit}
if { [ -z "${RECORD_MEM:-}" ] || [ -z "${REPORT:-}" ]; } && [ ! -x "$TK" ]; then
  (cd "$HERE" && cargo build --release -p tracekit) >&2 || exit 1
fi
command -v heaptrack_print > /dev/null || { echo "needs heaptrack (apt-get install heaptrack)" >&2; exit 1; }
gcc -O2 -g -pthread -o "$D/alloc_bench" "$HERE/bench/inputs/rtrace/alloc_bench.c" || exit 1
rm -f "$D/app.tkmem" "$D"/app.ht.*
if [ -n "${RECORD_MEM:-}" ]; then
  "$RECORD_MEM" "$D/app.tkmem" "$D/alloc_bench" "$N" "$T" > /dev/null || exit 1
else
  "$TK" -q record mem -o "$D/app.tkmem" -- "$D/alloc_bench" "$N" "$T" > /dev/null || exit 1
fi
heaptrack -o "$D/app.ht" "$D/alloc_bench" "$N" "$T" > /dev/null || exit 1
HT=$(ls "$D"/app.ht.*zst | head -1)

cpu() {  # cpu NAME CMD... : REPS runs, prints "NAME cpu_s wall_s rss_kb" of the median-CPU run
  local name=$1 i; shift
  : > "$D/$name.runs"
  for ((i = 0; i < REPS; i++)); do
    /usr/bin/time -f "%U %S %e %M" -o "$D/$name.time" "$@" > "$D/$name.out" 2> "$D/$name.err"
    tail -1 "$D/$name.time" | awk '{printf "%.2f %.2f %d\n", $1+$2, $3, $4}' >> "$D/$name.runs"
  done
  sort -n "$D/$name.runs" | awk -v n="$name" -v r="$REPS" 'NR == int((r + 1) / 2) {print n, $0}'
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
{
  if [ -n "${REPORT:-}" ]; then
    cpu report "$REPORT" "$D/app.tkmem" report
  else
    cpu report "$TK" report "$D/app.tkmem"
  fi
  cpu heaptrack_print heaptrack_print -f "$HT"
} | tee "$D/cpu.txt"
awk '{c[$1]=$2; r[$1]=$4} END {if (c["report"] > 0) printf "CPU heaptrack_print / tracekit report: %.2f; peak RSS: report %.1f MB, heaptrack_print %.1f MB\n", c["heaptrack_print"] / c["report"], r["report"]/1024, r["heaptrack_print"]/1024}' "$D/cpu.txt"
echo "files: $(wc -c < "$D/app.tkmem") bytes .tkmem, $(wc -c < "$HT") bytes heaptrack ($(basename "$HT"))"
if [ -z "${REPORT:-}" ]; then
  echo "-- tracekit"; grep -E "^  (allocations|peak|never freed|temporary)" "$D/report.out" | head -4
else
  echo "-- tracekit"; cat "$D/report.err"
fi
echo "-- heaptrack_print"; grep -E "^(calls to|temporary|peak heap|total memory leaked)" "$D/heaptrack_print.out"
