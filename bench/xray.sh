#!/bin/bash
# tracekit vs llvm-xray 14 on the big FDR traces, side by side.
#
#   usage: bench/xray.sh [DIR] [TRACEKIT]
#
# DIR (default ../bench-data) must hold xray/{bigtrace,big.fdr.xray,big-1t.fdr.xray}
# from bench/inputs/xray/make_big_trace.sh DIR (never put them in the repo).
# TRACEKIT defaults to target/release/tracekit (build it with
# `cargo build --release -p tracekit`).
# For each command: wall and CPU seconds (user+sys) and peak RSS of both tools
# and the ratios llvm-xray / tracekit of wall and of CPU time. tracekit runs
# REPS times (default 3; the medians of wall and CPU, the largest RSS are
# shown), llvm-xray LLVM_REPS times (default 1; it takes minutes). The 1-minute
# load average before each row is shown: the machine may be shared, so wall
# ratios need a quiet machine; CPU ratios are steadier. Output of both tools
# goes to /dev/null; the trace is read once before each row (page cache).
# SKIP_LLVM=1 skips the slow llvm-xray runs (convert takes ~100 s and 5 GB).
# TRACEKIT_THREADS=N limits tracekit's worker threads (default: all cores).
# ONLY=REGEX runs only the rows whose command name matches (e.g. ONLY='account|stack').
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
D=${1:-$HERE/../../bench-data}
TK=${2:-${CARGO_TARGET_DIR:-$HERE/../target}/release/tracekit}
REPS=${REPS:-3}
LLVM_REPS=${LLVM_REPS:-1}
XRAY=$(command -v llvm-xray-14 || command -v llvm-xray || true)
[ -x "$TK" ] || { echo "no tracekit binary at $TK" >&2; exit 1; }
[ -n "$XRAY" ] || { echo "llvm-xray not found (apt-get install llvm-14)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found (apt-get install time)" >&2; exit 1; }
cd "$D/xray" || { echo "no $D/xray; run make_big_trace.sh $D first" >&2; exit 1; }

measure() {  # measure N CMD... -> "wall cpu rssMiB rc" (median wall, median cpu, max rss, last rc)
  local n=$1; shift
  local f; f=$(mktemp)
  local runs=""
  for _ in $(seq "$n"); do
    /usr/bin/time -f "%e %U %S %M %x" -o "$f" "$@" > /dev/null 2> /dev/null
    # time prints "Command exited with non-zero status N" first on failure.
    runs+="$(tail -n 1 "$f")"$'\n'
  done
  rm -f "$f"
  med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
  local w c m rc
  w=$(printf "%s" "$runs" | awk '{ print $1 }' | med)
  c=$(printf "%s" "$runs" | awk '{ print $2 + $3 }' | med)
  m=$(printf "%s" "$runs" | awk '$4 > m { m = $4 } END { print m }')
  rc=$(printf "%s" "$runs" | awk 'END { print $5 }')
  awk -v w="$w" -v c="$c" -v m="$m" -v rc="$rc" 'BEGIN { printf "%.2f %.2f %.0f %d\n", w, c, m / 1024, rc }'
}

printf "%-32s %-16s %5s | %7s %7s %6s %3s | %7s %7s %6s %3s | %7s %7s\n" \
  command trace load tk_wall tk_cpu tk_MiB rc ll_wall ll_cpu ll_MiB rc wall_x cpu_x
row() {  # row NAME TRACE "tracekit args" "llvm-xray args"
  local name=$1 trace=$2 tk_args=$3 llvm_args=$4
  [[ "$name" =~ ${ONLY:-.} ]] || return 0
  cat "$trace" > /dev/null
  local load; load=$(cut -d' ' -f1 /proc/loadavg)
  read -r tw tc tm trc <<< "$(measure "$REPS" $TK $tk_args)"
  if [ -n "${SKIP_LLVM:-}" ] || [ -z "$llvm_args" ]; then
    lw=-; lc=-; lm=-; lrc=-; wx=-; cx=-
  else
    read -r lw lc lm lrc <<< "$(measure "$LLVM_REPS" $XRAY $llvm_args)"
    wx=$(awk -v a="$lw" -v b="$tw" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')
    cx=$(awk -v a="$lc" -v b="$tc" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')
  fi
  printf "%-32s %-16s %5s | %7s %7s %6s %3s | %7s %7s %6s %3s | %7s %7s\n" \
    "$name" "$trace" "$load" "$tw" "$tc" "$tm" "$trc" "$lw" "$lc" "$lm" "$lrc" "$wx" "$cx"
}

for T in big-1t.fdr.xray big.fdr.xray; do
  [ -f "$T" ] || continue
  row "account" "$T" "xray account -m bigtrace $T" "account -m bigtrace $T"
  row "stack" "$T" "xray stack -m bigtrace $T" "stack -m bigtrace $T"
  row "graph" "$T" "xray graph -m bigtrace $T" "graph -m bigtrace $T"
  row "graph-diff (trace with itself)" "$T" "xray graph-diff -e sum -c sum -v sum -b sum $T $T" \
    "graph-diff -e sum -c sum -v sum -b sum $T $T"
  row "fdr-dump" "$T" "xray fdr-dump $T" "fdr-dump $T"
  row "convert chrome (vs trace_event)" "$T" "convert -m bigtrace $T --to chrome" \
    "convert -m bigtrace -output-format=trace_event -symbolize $T"
  row "convert trace_event" "$T" "xray convert -m bigtrace -symbolize -output-format=trace_event $T" ""
  row "convert yaml" "$T" "xray convert -m bigtrace -symbolize -output-format=yaml $T" ""
done
echo "(llvm-xray 14 fails account/stack/graph on big.fdr.xray after loading: > 16 buffers per thread; its"
echo " figures there are load time only. wall_x / cpu_x = llvm-xray wall / CPU s over tracekit's.)"
