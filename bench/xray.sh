#!/bin/bash
# tracekit vs llvm-xray 14 on the big FDR traces, side by side.
#
#   usage: bench/xray.sh [DIR] [TRACEKIT]
#
# DIR (default ../bench-data) must hold xray/{bigtrace,big.fdr.xray,big-1t.fdr.xray}
# from ../shared/bench/xray/make_big_trace.sh DIR (never put them in the repo).
# TRACEKIT defaults to target/release/tracekit (build it with
# `cargo build --release -p tracekit`).
# For each command: wall and CPU seconds (user+sys) and peak RSS of both tools,
# and the CPU-time ratio llvm-xray / tracekit (the machine is shared: compare
# CPU time). Output of both tools goes to /dev/null. SKIP_LLVM=1 skips the slow
# llvm-xray runs (convert takes ~100 s and 5 GB).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
D=${1:-$HERE/../../bench-data}
TK=${2:-${CARGO_TARGET_DIR:-$HERE/../target}/release/tracekit}
XRAY=$(command -v llvm-xray-14 || command -v llvm-xray || true)
[ -x "$TK" ] || { echo "no tracekit binary at $TK" >&2; exit 1; }
[ -n "$XRAY" ] || { echo "llvm-xray not found (apt-get install llvm-14)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time not found (apt-get install time)" >&2; exit 1; }
cd "$D/xray" || { echo "no $D/xray; run make_big_trace.sh $D first" >&2; exit 1; }

measure() {  # measure CMD... -> "wall cpu rssMiB rc"
  local f; f=$(mktemp)
  /usr/bin/time -f "%e %U %S %M %x" -o "$f" "$@" > /dev/null 2> /dev/null
  # time prints "Command exited with non-zero status N" first on failure.
  tail -n 1 "$f" | awk '{ printf "%.2f %.2f %.0f %d\n", $1, $2 + $3, $4 / 1024, $5 }'
  rm -f "$f"
}

printf "%-34s %-16s %9s %9s %8s %4s | %9s %9s %8s %4s | %7s\n" \
  command trace tk_wall tk_cpu tk_MiB rc llvm_wall llvm_cpu llvm_MiB rc cpu_x
row() {  # row NAME TRACE "tracekit args" "llvm-xray args"
  local name=$1 trace=$2 tk_args=$3 llvm_args=$4
  cat "$trace" > /dev/null
  read -r tw tc tm trc <<< "$(measure $TK $tk_args)"
  if [ -n "${SKIP_LLVM:-}" ] || [ -z "$llvm_args" ]; then
    lw=-; lc=-; lm=-; lrc=-; ratio=-
  else
    read -r lw lc lm lrc <<< "$(measure $XRAY $llvm_args)"
    ratio=$(awk -v a="$lc" -v b="$tc" 'BEGIN { printf "%.1f", (b > 0 ? a / b : 0) }')
  fi
  printf "%-34s %-16s %9s %9s %8s %4s | %9s %9s %8s %4s | %7s\n" \
    "$name" "$trace" "$tw" "$tc" "$tm" "$trc" "$lw" "$lc" "$lm" "$lrc" "$ratio"
}

for T in big-1t.fdr.xray big.fdr.xray; do
  [ -f "$T" ] || continue
  row "account" "$T" "xray account -m bigtrace $T" "account -m bigtrace $T"
  row "stack" "$T" "xray stack -m bigtrace $T" "stack -m bigtrace $T"
  row "graph" "$T" "xray graph -m bigtrace $T" "graph -m bigtrace $T"
  row "fdr-dump" "$T" "xray fdr-dump $T" "fdr-dump $T"
  row "convert chrome (vs trace_event)" "$T" "convert -m bigtrace $T --to chrome" \
    "convert -m bigtrace -output-format=trace_event -symbolize $T"
  row "convert trace_event" "$T" "xray convert -m bigtrace -symbolize -output-format=trace_event $T" ""
  row "convert yaml" "$T" "xray convert -m bigtrace -symbolize -output-format=yaml $T" ""
done
echo "(llvm-xray 14 fails account/stack/graph on big.fdr.xray after loading: > 16 buffers per thread; its"
echo " figures there are load time only. cpu_x = llvm-xray CPU s / tracekit CPU s.)"
