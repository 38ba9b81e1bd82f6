#!/usr/bin/env bash
# The timeline sinks side by side on the same large inputs: time, memory and
# bytes of every output format (Chrome JSON, Perfetto, and Parquet where
# built), with the ratios to Chrome JSON (bytes, wall, CPU: below 1 is
# smaller or faster than Chrome JSON).
#
#   bench/timeline.sh [DATA_DIR] [RUNS]
#
# DATA_DIR (default ./bench-data) holds the inputs the generators make
# (never put them in the repository):
#   xray/big-1t.fdr.xray, xray/big.fdr.xray + xray/bigtrace
#                        bench/inputs/xray/make_big_trace.sh DATA_DIR  (~259 MB each)
#   trace2/big.event.jsonl
#                        bench/inputs/trace2/make_big.sh DATA_DIR      (~320 MiB)
# Missing inputs are skipped. Each row runs RUNS times (default 3): median
# wall and CPU (user+sys) seconds, largest peak RSS. Outputs go to a
# temporary directory (several GB for Chrome JSON) and are removed.
# FORMATS='chrome perfetto' limits the formats.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-./bench-data}
runs=${2:-3}
formats=${FORMATS:-chrome perfetto parquet}
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }
(cd "$here" && cargo build --release -q -p tracekit)
tk=${CARGO_TARGET_DIR:-$here/target}/release/tracekit
out=$(mktemp -d "${TMPDIR:-/tmp}/tracekit-timeline-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT

measure() {  # measure DEST CMD... -> "wall cpu rssMiB bytes" (medians, max rss)
  local dest=$1; shift
  local f results=""
  f=$(mktemp)
  for _ in $(seq "$runs"); do
    rm -rf "$dest"
    /usr/bin/time -f "%e %U %S %M" -o "$f" "$@" > /dev/null 2> /dev/null || { echo "failed: $*" >&2; return 1; }
    results+="$(tail -n 1 "$f")"$'\n'
  done
  rm -f "$f"
  med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
  local w c m b
  w=$(printf "%s" "$results" | awk '{ print $1 }' | med)
  c=$(printf "%s" "$results" | awk '{ print $2 + $3 }' | med)
  m=$(printf "%s" "$results" | awk '$4 > m { m = $4 } END { print m }')
  b=$(du -sb "$dest" | cut -f1)
  rm -rf "$dest"
  awk -v w="$w" -v c="$c" -v m="$m" -v b="$b" 'BEGIN { printf "%.2f %.2f %.0f %d\n", w, c, m / 1024, b }'
}

printf "%-26s %-9s %5s | %7s %7s %6s %13s | %7s %7s %7s\n" input format load wall cpu MiB bytes bytes_x wall_x cpu_x
bench() {  # bench NAME INPUT [EXTRA ARGS...]
  local name=$1 input=$2; shift 2
  [ -f "$input" ] || { echo "skipped $name: no $input" >&2; return 0; }
  cat "$input" > /dev/null
  local cb="" cc="" cw=""
  for fmt in $formats; do
    local dest=$out/$name.$fmt
    local load; load=$(cut -d' ' -f1 /proc/loadavg)
    local res
    res=$(measure "$dest" "$tk" convert "$input" "$@" --to "$fmt" -o "$dest") || continue
    read -r w c m b <<< "$res"
    if [ "$fmt" = chrome ]; then cb=$b; cc=$c; cw=$w; fi
    local bx="-" cx="-" wx="-"
    if [ -n "$cb" ]; then
      bx=$(awk -v a="$b" -v z="$cb" 'BEGIN { printf "%.3f", a / z }')
      wx=$(awk -v a="$w" -v z="$cw" 'BEGIN { printf "%.2f", (z > 0 ? a / z : 0) }')
      cx=$(awk -v a="$c" -v z="$cc" 'BEGIN { printf "%.2f", (z > 0 ? a / z : 0) }')
    fi
    printf "%-26s %-9s %5s | %7s %7s %6s %13s | %7s %7s %7s\n" "$name" "$fmt" "$load" "$w" "$c" "$m" "$b" "$bx" "$wx" "$cx"
  done
}

bench xray-1t "$data/xray/big-1t.fdr.xray" -m "$data/xray/bigtrace"
bench xray-4t "$data/xray/big.fdr.xray" -m "$data/xray/bigtrace"
bench trace2 "$data/trace2/big.event.jsonl"
