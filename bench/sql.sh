#!/usr/bin/env bash
# The example queries of docs/sql.md, timed: `tracekit sql` on the trace in
# place (nothing converted first) and on its Parquet directory
# (`convert --to parquet`), beside the report that answers the same
# question without SQL where there is one.
#
#   bench/sql.sh [DATA_DIR] [RUNS]
#
# DATA_DIR (default ./bench-data) holds the inputs the generators make
# (see bench/timeline.sh; never put them in the repository):
#   xray/big-1t.fdr.xray + xray/bigtrace   bench/inputs/xray/make_big_trace.sh DATA_DIR
#   trace2/big.event.jsonl                 bench/inputs/trace2/make_big.sh DATA_DIR
# The corpus (tests/corpus) is queried too. Missing inputs are skipped.
# Each row runs RUNS times (default 3): median wall and CPU (user+sys)
# seconds, largest peak RSS (MiB), and the 1-minute load average before it.
# ONLY=REGEX runs only the rows whose name matches.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-./bench-data}
runs=${2:-3}
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }
(cd "$here" && cargo build --release -q -p tracekit)
tk=${CARGO_TARGET_DIR:-$here/target}/release/tracekit
out=$(mktemp -d "${TMPDIR:-/tmp}/tracekit-sql-bench.XXXXXX")
trap 'rm -rf "$out"' EXIT
corpus=$here/tests/corpus

measure() {  # measure CMD... -> "wall cpu rssMiB rows" (medians, max rss)
  local f results="" rows=0
  f=$(mktemp)
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %U %S %M" -o "$f" "$@" > "$out/result" 2> "$out/stderr" \
      || { echo "failed: $* ($(head -c 300 "$out/stderr"))" >&2; rm -f "$f"; return 1; }
    results+="$(tail -n 1 "$f")"$'\n'
    rows=$(wc -l < "$out/result")
  done
  rm -f "$f"
  med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
  local w c m
  w=$(printf "%s" "$results" | awk '{ print $1 }' | med)
  c=$(printf "%s" "$results" | awk '{ print $2 + $3 }' | med)
  m=$(printf "%s" "$results" | awk '$4 > m { m = $4 } END { print m }')
  awk -v w="$w" -v c="$c" -v m="$m" -v r="$rows" 'BEGIN { printf "%.2f %.2f %.0f %d\n", w, c, m / 1024, r }'
}

printf "%-34s %-8s %5s | %7s %7s %6s %5s\n" query on load wall cpu MiB lines
row() {  # row NAME ON CMD...
  local name=$1 on=$2; shift 2
  [[ "$name" =~ ${ONLY:-.} ]] || return 0
  local load res
  load=$(cut -d' ' -f1 /proc/loadavg)
  res=$(measure "$@") || return 0
  read -r w c m r <<< "$res"
  printf "%-34s %-8s %5s | %7s %7s %6s %5s\n" "$name" "$on" "$load" "$w" "$c" "$m" "$r"
}

# sql NAME QUERY PARQUET_DIR INPUT [EXTRA...]: the query in place and on Parquet.
sql() {
  local name=$1 q=$2 pq=$3; shift 3
  row "$name" trace "$tk" sql --format csv "$q" "$@"
  [ -d "$pq" ] && row "$name" parquet "$tk" sql --format csv "$q" "$pq"
  return 0
}

to_parquet() {  # to_parquet DIR INPUT [EXTRA...]
  local dir=$1; shift
  "$tk" convert "$@" --to parquet -o "$dir" > /dev/null 2>&1 || echo "convert $* failed" >&2
}

# ------------------------------------------------------------------ XRay
xray_account="SELECT function, count(*) AS calls, sum(dur_ns) / 1e9 AS total_s,
  max(dur_ns) / 1e9 AS max_s FROM xray_calls GROUP BY function ORDER BY total_s DESC LIMIT 20"
longest="SELECT dialect, file, name, dur_ns / 1e6 AS ms FROM slices ORDER BY dur_ns DESC LIMIT 20"
count_slices="SELECT count(*) AS n, sum(dur_ns) AS total FROM slices"

big_xray=$data/xray/big-1t.fdr.xray
if [ -f "$big_xray" ]; then
  cat "$big_xray" > /dev/null
  to_parquet "$out/xray" "$big_xray" -m "$data/xray/bigtrace"
  row "xray account (report)" report "$tk" xray account -d "$big_xray" -m "$data/xray/bigtrace"
  sql "xray: per function (account)" "$xray_account" "$out/xray" "$big_xray" -m "$data/xray/bigtrace"
  sql "xray: longest slices" "$longest" "$out/xray" "$big_xray" -m "$data/xray/bigtrace"
  sql "xray: count(*) slices" "$count_slices" "$out/xray" "$big_xray" -m "$data/xray/bigtrace"
  rm -rf "$out/xray"
else
  echo "skipped xray: no $big_xray" >&2
fi

# ---------------------------------------------------------------- Trace2
trace2_commands="WITH r AS (
  SELECT command, elapsed_ns,
         row_number() OVER (PARTITION BY command ORDER BY elapsed_ns) AS k,
         count(elapsed_ns) OVER (PARTITION BY command) AS n
  FROM trace2_processes)
SELECT command, count(*) AS count,
       max(CASE WHEN k = CAST(ceil(n * 0.5) AS BIGINT) THEN elapsed_ns END) / 1e9 AS p50_s,
       max(elapsed_ns) / 1e9 AS max_s
FROM r GROUP BY command ORDER BY count DESC"
trace2_days="SELECT command, date_trunc('day', start_time) AS day, host,
       avg(elapsed_ns) / 1e9 AS mean_s, count(*) AS n
FROM trace2_processes GROUP BY 1, 2, 3 ORDER BY 1, 2"

big_trace2=$data/trace2/big.event.jsonl
if [ -f "$big_trace2" ]; then
  cat "$big_trace2" > /dev/null
  to_parquet "$out/trace2" "$big_trace2"
  row "trace2 per command (report)" report "$tk" report --json "$big_trace2"
  sql "trace2: per command p50" "$trace2_commands" "$out/trace2" "$big_trace2"
  sql "trace2: per command per day" "$trace2_days" "$out/trace2" "$big_trace2"
  sql "trace2: longest slices" "$longest" "$out/trace2" "$big_trace2"
  rm -rf "$out/trace2"
else
  echo "skipped trace2: no $big_trace2" >&2
fi

# ---------------------------------------------------------------- corpus
slowest_units="SELECT source, dur_ns / 1e9 AS s FROM build_processes
WHERE is_compile ORDER BY dur_ns DESC LIMIT 10"
units_per_build="SELECT source, count(DISTINCT file) AS builds, avg(dur_ns) / 1e9 AS mean_s
FROM build_processes WHERE is_compile GROUP BY source ORDER BY mean_s DESC LIMIT 20"
leaks="WITH bt AS (
  SELECT file, backtrace_id,
         string_agg(CAST(address AS VARCHAR), ',' ORDER BY frame) AS frames
  FROM rtrace_backtraces GROUP BY file, backtrace_id)
SELECT a.resource, bt.frames, count(*) AS blocks, sum(a.size) AS bytes
FROM rtrace_allocations a
LEFT JOIN bt ON a.file = bt.file AND a.backtrace_id = bt.backtrace_id
WHERE a.leaked GROUP BY a.resource, bt.frames ORDER BY bytes DESC"

if [ -d "$corpus" ]; then
  builds=("$corpus"/buildtrace/recorded/*.trace)
  for f in "$corpus"/buildtrace/kwtrace-0*.jsonl; do
    [[ "$f" == *compile_commands* ]] || builds+=("$f")
  done
  to_parquet "$out/builds" "${builds[@]}"
  sql "corpus builds: slowest units" "$slowest_units" "$out/builds" "${builds[@]}"
  sql "corpus builds: units per build" "$units_per_build" "$out/builds" "${builds[@]}"
  rtraces=("$corpus"/rtrace/upstream/sample.txt "$corpus"/rtrace/upstream/context.txt)
  to_parquet "$out/rtrace" "${rtraces[@]}"
  sql "corpus rtrace: leaks" "$leaks" "$out/rtrace" "${rtraces[@]}"
  t2=("$corpus"/trace2/*/event.jsonl)
  to_parquet "$out/t2" "${t2[@]}"
  sql "corpus trace2: per command p50" "$trace2_commands" "$out/t2" "${t2[@]}"
  sql "corpus trace2: longest slices" "$longest" "$out/t2" "${t2[@]}"
fi
