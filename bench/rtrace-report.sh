#!/bin/bash
# The memory report side by side with heaptrack's: `tracekit report` on a
# `record mem` trace of alloc_bench versus `heaptrack_print` on the same
# trace converted to heaptrack's file (`tracekit convert --to heaptrack`),
# and the conversion itself. Prints CPU time (user+sys) and peak RSS of the
# median run of each, the ratio, and both tools' totals (which must agree).
#
#   usage: bench/rtrace-report.sh [DIR]   (default ./bench-data; writes DIR/rtrace-report/)
#   env:   N=200000 allocations, T=2 threads, REPS=3,
#          TRACEKIT=path/to/tracekit (default: target/release/tracekit, built if missing)
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
D=${1:-./bench-data}/rtrace-report
mkdir -p "$D"
D=$(cd "$D" && pwd)
N=${N:-200000}
T=${T:-2}
REPS=${REPS:-3}
TK=${TRACEKIT:-$HERE/target/release/tracekit}
if [ ! -x "$TK" ]; then
  (cd "$HERE" && cargo build --release -p tracekit) >&2 || exit 1
fi
command -v heaptrack_print >/dev/null || { echo "needs heaptrack_print (apt-get install heaptrack)" >&2; exit 1; }
gcc -O2 -g -pthread -o "$D/alloc_bench" "$HERE/bench/inputs/rtrace/alloc_bench.c" || exit 1
"$TK" -q record mem -o "$D/app.mem" -- "$D/alloc_bench" "$N" "$T" 100 > /dev/null || exit 1
cp "$D"/app.mem/*-0.rtrace "$D/app.rtrace" || exit 1

cpu() {  # cpu NAME CMD... : REPS runs, prints "NAME cpu_s rss_kb" of the median-CPU run
  local name=$1 i; shift
  : > "$D/$name.runs"
  for ((i = 0; i < REPS; i++)); do
    /usr/bin/time -f "%U %S %M" -o "$D/$name.time" "$@" > "$D/$name.out" 2> "$D/$name.err"
    tail -1 "$D/$name.time" | awk '{printf "%.2f %d\n", $1+$2, $3}' >> "$D/$name.runs"
  done
  sort -n "$D/$name.runs" | awk -v n="$name" -v r="$REPS" 'NR == int((r + 1) / 2) {print n, $0}'
}

{
  cpu convert "$TK" convert "$D/app.rtrace" --to heaptrack -o "$D/app.heaptrack.zst"
  cpu report "$TK" report "$D/app.rtrace"
  cpu heaptrack_print heaptrack_print -f "$D/app.heaptrack.zst" --disable-builtin-suppressions -l 1
} | tee "$D/cpu.txt"
awk '{c[$1]=$2} END {if (c["report"] > 0) printf "heaptrack_print / tracekit report CPU: %.2f\n", c["heaptrack_print"] / c["report"]}' "$D/cpu.txt"
echo "trace: $(wc -c < "$D/app.rtrace") bytes text, $(wc -c < "$D/app.heaptrack.zst") bytes heaptrack.zst"
echo "-- tracekit"; grep -E "^  (allocations|peak|never freed|temporary)" "$D/report.out" | head -4
echo "-- heaptrack_print"; grep -E "^(calls to|temporary|peak heap|total memory leaked)" "$D/heaptrack_print.out"
