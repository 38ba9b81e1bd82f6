#!/bin/bash
# tracekit record mem vs heaptrack and heaptrack -r, side by side in one run,
# on the same programs: CPython running a JSON script (PYTHONMALLOC=malloc),
# `git log -p`, gcc's cc1 compiling a preprocessed file, sqlite3 running a
# small SQL script, and alloc_bench (N allocations over T threads).
#
# Per program and configuration: the median CPU time (user+sys of the whole
# process tree), wall time and peak RSS (GNU time's %M: the largest process)
# over REPS rounds, the CPU added per allocation call, and the median size
# of what each tool leaves on disk:
#   tracekit       record mem's default, one .tkmem file (docs/formats/tkmem.md)
#   tracekit_addr  record mem --addresses: the same with every heap block's
#                  address (what sp-rtrace text conversion needs)
#   tracekit_text  record mem --format text: the sp-rtrace text directory (what
#                  record mem wrote by default before the .tkmem file)
#   heaptrack_raw  heaptrack -r: its raw trace (zstd), resolved later
#   heaptrack      heaptrack: raw trace interpreted while recording (zstd)
# Rounds alternate between the configurations (the machine's load hits them
# alike). Allocation calls are tracekit's count of the program's own process
# (`tracekit info --json` on the recording, through TRACEKIT_INFO).
#
#   usage: bench/rtrace.sh [DIR]      (default ./bench-data; writes DIR/rtrace-tk/)
#   env:   N=2000000 alloc_bench allocations, T=4 threads, REPS=3 rounds
#          PY_N=20000 documents for the Python script, GIT_N=300 commits of
#          git log -p (of this repository), PROGRAMS="python git cc1 sqlite3 alloc_bench"
#          TRACEKIT=path/to/tracekit (release; built if missing and
#          RECORD_MEM is unset)
#          RECORD_MEM=path/to/record_mem example (cargo build --release -p
#          tracekit-rtrace --example record_mem): records with it instead of
#          the CLI (the same recorder without the SQL engine); then the
#          allocation counts come from TRACEKIT_INFO (default: TRACEKIT or
#          target/debug/tracekit, any build: it only reads the file head)
#          SKIP_PEERS=1 runs only plain and tracekit
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
D=${1:-./bench-data}/rtrace-tk
mkdir -p "$D"
D=$(cd "$D" && pwd)
N=${N:-2000000}
T=${T:-4}
REPS=${REPS:-3}
PY_N=${PY_N:-20000}
GIT_N=${GIT_N:-300}
PROGRAMS=${PROGRAMS:-python git cc1 sqlite3 alloc_bench}
TK=${TRACEKIT:-$HERE/target/release/tracekit}
if [ -z "${RECORD_MEM:-}" ] && [ ! -x "$TK" ]; then
  (cd "$HERE" && cargo build --release -p tracekit) >&2 || exit 1
fi
INFO=${TRACEKIT_INFO:-$TK}
[ -x "$INFO" ] || INFO=$HERE/target/debug/tracekit
IN=$HERE/bench/inputs/rtrace
have() { command -v "$1" > /dev/null 2>&1; }
PEERS=1
[ "${SKIP_PEERS:-0}" = 1 ] && PEERS=0
if [ $PEERS = 1 ] && ! have heaptrack; then
  echo "heaptrack not installed (apt-get install -y heaptrack): peers skipped" >&2
  PEERS=0
fi

gcc -O2 -g -pthread -o "$D/alloc_bench" "$IN/alloc_bench.c" || exit 1
gcc -E "$IN/alloc_bench.c" -o "$D/cc1_input.i" || exit 1
PY=$(command -v python3.11 || command -v python3)
PY=$("$PY" -c 'import sys; print(sys.executable)')  # not a pyenv shim script
CC1=$(gcc -print-prog-name=cc1)

# The command line of each program (run in $D; stdout to a file).
cmd() {
  case $1 in
    python) echo "$PY $IN/json_work.py $PY_N" ;;
    git) echo "git -C $HERE log -p -n $GIT_N" ;;
    cc1) echo "$CC1 -quiet -O2 $D/cc1_input.i -o $D/cc1_output.s" ;;
    sqlite3) echo "sqlite3 :memory: -init $IN/sqlite_work.sql .quit" ;;
    alloc_bench) echo "$D/alloc_bench $N $T" ;;
  esac
}
export PYTHONMALLOC=malloc

one() {  # one NAME CMD... : one run appended to NAME.runs as "cpu wall rss"
  local name=$1; shift
  /usr/bin/time -f "%U %S %e %M" -o "$D/$name.time" "$@" > "$D/$name.out" 2> "$D/$name.err"
  tail -1 "$D/$name.time" | awk '{printf "%.3f %.2f %d\n", $1+$2, $3, $4}' >> "$D/$name.runs"
}

rec() {  # rec NAME FORMAT OUT CMD... : one record mem run (FORMAT
         # tkmem+addresses: --addresses)
  local name=$1 format=$2 out=$3; shift 3
  local extra=()
  if [ "$format" = tkmem+addresses ]; then format=tkmem; extra=(--addresses); fi
  if [ -n "${RECORD_MEM:-}" ]; then
    one "$name" "$RECORD_MEM" --format "$format" "${extra[@]}" "$out" "$@"
  else
    one "$name" "$TK" -q record mem --format "$format" "${extra[@]}" -o "$out" -- "$@"
  fi
}

size() { du -sb "$@" 2> /dev/null | awk '{s += $1} END {print s + 0}'; }

: > "$D/load.txt"
for p in $PROGRAMS; do
  for c in plain tracekit tracekit_addr tracekit_text heaptrack_raw heaptrack; do : > "$D/${p}_$c.runs"; : > "$D/${p}_$c.size"; done
done
for ((r = 0; r < REPS; r++)); do
  cut -d' ' -f1-3 /proc/loadavg >> "$D/load.txt"
  for p in $PROGRAMS; do
    # shellcheck disable=SC2046
    set -- $(cmd "$p")
    one "${p}_plain" "$@"
    rm -rf "$D/$p.tkmem" "$D/$p.addr.tkmem" "$D/$p.text"
    rec "${p}_tracekit" tkmem "$D/$p.tkmem" "$@"
    size "$D/$p.tkmem" >> "$D/${p}_tracekit.size"
    rec "${p}_tracekit_addr" tkmem+addresses "$D/$p.addr.tkmem" "$@"
    size "$D/$p.addr.tkmem" >> "$D/${p}_tracekit_addr.size"
    rec "${p}_tracekit_text" text "$D/$p.text" "$@"
    size "$D/$p.text" >> "$D/${p}_tracekit_text.size"
    if [ $PEERS = 1 ]; then
      rm -f "$D/$p.htraw".* "$D/$p.ht".*
      one "${p}_heaptrack_raw" heaptrack -r -o "$D/$p.htraw" "$@"
      size "$D/$p.htraw".* >> "$D/${p}_heaptrack_raw.size"
      one "${p}_heaptrack" heaptrack -o "$D/$p.ht" "$@"
      size "$D/$p.ht".* >> "$D/${p}_heaptrack.size"
    fi
  done
done
for p in $PROGRAMS; do
  "$INFO" -q info --json "$D/$p.tkmem" 2> /dev/null | head -2 | tail -1 \
    | python3 -c 'import json,sys; print(json.load(sys.stdin).get("details", {}).get("allocations", 0))' \
    > "$D/${p}_allocs.txt" 2> /dev/null || echo 0 > "$D/${p}_allocs.txt"
  "$INFO" -q info --json "$D/$p.tkmem" 2> /dev/null | head -1 > "$D/${p}_tkmem_info.json"
done

python3 - "$D" "$PROGRAMS" <<'PY'
import json, os, statistics, sys
d, programs = sys.argv[1], sys.argv[2].split()
def runs(name):
    p = os.path.join(d, name + ".runs")
    if not os.path.exists(p): return None
    rows = [tuple(map(float, l.split())) for l in open(p) if l.strip()]
    if not rows: return None
    return tuple(statistics.median(r[i] for r in rows) for i in range(3)) + (len(rows),)
def median_size(name):
    # One size per round (a program's allocator may lay out memory
    # differently each run): the median, as the times.
    try: sizes = [int(l) for l in open(os.path.join(d, name)) if l.strip()]
    except (OSError, ValueError): return None
    return int(statistics.median(sizes)) if sizes else None
def num(name):
    try: return int(open(os.path.join(d, name)).read().split()[0])
    except (OSError, ValueError, IndexError): return None
loads = [l.split()[0] for l in open(os.path.join(d, "load.txt"))]
print(f"load average (1 min) at each round: {' '.join(loads)}")
for p in programs:
    plain = runs(f"{p}_plain")
    if not plain: continue
    allocs = num(f"{p}_allocs.txt") or 0
    print(f"\n{p}: {allocs} allocation calls (the command's process), medians of {plain[3]} runs")
    print(f"{'configuration':<15} {'CPU s':>7} {'wall s':>7} {'max RSS MB':>10} {'added CPU/call':>15} {'file bytes':>12} {'bytes/call':>10} {'vs heaptrack':>12}")
    ht = median_size(f"{p}_heaptrack.size")
    for c in ["plain", "tracekit", "tracekit_addr", "tracekit_text", "heaptrack_raw", "heaptrack"]:
        r = runs(f"{p}_{c}")
        if not r: continue
        cpu, wall, rss, _ = r
        add = f"{(cpu - plain[0]) / allocs * 1e6:12.3f} us" if allocs and c != "plain" else ""
        size = median_size(f"{p}_{c}.size")
        per = f"{size / allocs:10.2f}" if size and allocs else ""
        ratio = f"{size / ht:11.2f}x" if size and ht else ""
        print(f"{c:<15} {cpu:7.2f} {wall:7.2f} {rss/1024:10.1f} {add:>15} {size if size is not None else '':>12} {per:>10} {ratio:>12}")
PY
