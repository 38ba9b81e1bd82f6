#!/usr/bin/env bash
# tracekit beside the Trace2 baselines on the same large EVENT file, in one
# go, with the ratios.
#
#   bench/trace2.sh [DATA_DIR] [RUNS]
#
# DATA_DIR defaults to ./bench-data; it must hold trace2/big.event.jsonl
# from bench/inputs/trace2/make_big.sh (run that first; ~320 MiB).
# Baselines: the stdlib-json Python analysis from bench/inputs/trace2
# (per-command percentiles and per-region totals, like `tracekit report`),
# jq (a streaming count by event), and cat (the I/O floor).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-./bench-data}
runs=${2:-3}
file=$data/trace2/big.event.jsonl
peers=$here/bench/inputs/trace2
[ -f "$file" ] || { echo "no $file: run $peers/make_big.sh $data first" >&2; exit 1; }
command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine; }
command -v jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq; }
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }

(cd "$here" && cargo build --release -q -p tracekit)
tk=${CARGO_TARGET_DIR:-$here/target}/release/tracekit
size=$(stat -c %s "$file")
mib=$(awk -v s="$size" 'BEGIN{printf "%.1f", s/1048576}')
cat "$file" > /dev/null
echo "input: $file ($mib MiB)"
echo

json=$(mktemp)
trap 'rm -f "$json"' EXIT
hyperfine -N --warmup 1 --runs "$runs" --export-json "$json" \
  -n "tracekit report" "$tk report $file -o /dev/null" \
  -n "tracekit convert --to trace2-perf" "$tk convert $file --to trace2-perf -o /dev/null" \
  -n "tracekit info" "$tk info $file" \
  -n "python3 json (per-command/per-region)" "python3 $peers/analyze_trace2.py $file" \
  -n "cat" "cat $file" >/dev/null

echo "median wall time, throughput, and ratio to the Python baseline:"
python3 - "$json" "$size" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
size = int(sys.argv[2]) / 1048576
by = {r["command"]: r["median"] for r in res}
py = by["python3 json (per-command/per-region)"]
for name, t in by.items():
    print(f"  {name:40s} {t:8.3f} s  {size / t:8.1f} MiB/s  {py / t:7.1f}x")
PY
echo
echo "peak memory (max RSS):"
for args in "report $file -o /dev/null" "convert $file --to trace2-perf -o /dev/null"; do
  /usr/bin/time -f "  tracekit ${args%% *}: %M KiB" "$tk" $args 2>&1 >/dev/null | tail -1
done
/usr/bin/time -f "  python3 baseline: %M KiB" python3 "$peers/analyze_trace2.py" "$file" 2>&1 >/dev/null | tail -1
