#!/usr/bin/env bash
# Compilation database from a build log: tracekit build spec --from-log vs compiledb
# (PyPI compiledb, the tool built for this), on the saved logs of the corpus; prints the
# median wall time and peak RSS of each, and whether each equals Bear 3.1.1's database
# (entries as a set: directory, file, arguments, output).
#
#   bench/buildlogs.sh [--reps N] [--tracekit BIN]
#
# The logs name /home/dev/...: the sources are recreated (empty files) under a scratch
# directory and the paths mapped, as crates/tracekit/tests/build_logs.rs does.
# Needs: python3, compiledb (python3 -m pip install compiledb), GNU time, gzip.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
REPS=5
TK=${TRACEKIT:-${CARGO_TARGET_DIR:-$ROOT/target}/release/tracekit}
while [ $# -gt 0 ]; do
    case $1 in
        --reps) REPS=$2; shift 2 ;;
        --tracekit) TK=$2; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) echo "buildlogs.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
TK=$(cd "$(dirname "$TK")" 2>/dev/null && pwd)/$(basename "$TK")
[ -x "$TK" ] || { echo "buildlogs.sh: no tracekit at $TK (--tracekit BIN)" >&2; exit 2; }
command -v compiledb >/dev/null || { echo "buildlogs.sh: compiledb is not installed" >&2; exit 2; }
C=$ROOT/tests/corpus/buildtrace/logs
S=$(mktemp -d); trap 'rm -rf "$S"' EXIT
H=$S/home-dev
run() { # name log bear dir
    local name=$1 log=$2 bear=$3 dir=$4
    python3 - "$bear" "$H" <<'PY'
import json, os, sys
db = json.load(open(sys.argv[1]))
for e in db:
    f = e["file"].replace("/home/dev", sys.argv[2])
    os.makedirs(os.path.dirname(f), exist_ok=True); open(f, "w").close()
PY
    if [[ $log == *.gz ]]; then gzip -dc "$log"; else cat "$log"; fi | sed "s|/home/dev|$H|g" > "$S/log"
    sed "s|/home/dev|$H|g" "$bear" > "$S/bear.json"
    mkdir -p "$H/$dir"
    for tool in tracekit compiledb; do
        : > "$S/times"
        for _ in $(seq "$REPS"); do
            if [ $tool = tracekit ]; then
                cmd=(env -i PATH=/usr/bin:/bin "$TK" build spec --from-log "$S/log" -o "$S/$tool.json")
            else
                cmd=(compiledb -p "$S/log" -o "$S/$tool.json" -f)
            fi
            (cd "$H/$dir" && /usr/bin/time -f "%e %M" -a -o "$S/times" "${cmd[@]}" >/dev/null 2>"$S/err") \
                || { echo "buildlogs.sh: $tool failed on $name:" >&2; cat "$S/err" >&2; }
        done
        python3 - "$name" "$tool" "$S/times" "$S/$tool.json" "$S/bear.json" <<'PY'
import json, statistics, sys
name, tool, times, out, bear = sys.argv[1:]
rows = [l.split() for l in open(times) if l.strip() and l[0].isdigit()]
secs = statistics.median(float(r[0]) for r in rows); rss = max(int(r[1]) for r in rows)
key = lambda e: (e["directory"], e["file"], tuple(e.get("arguments") or []), e.get("output"))
got, want = json.load(open(out)), json.load(open(bear))
same = set(map(key, got)) == set(map(key, want))
print(f"{name:28} {tool:10} {secs:7.3f} s {rss/1024:7.1f} MiB  {len(got):3} entries  equals Bear: {same}")
PY
    done
}
run hiredis-make-n "$C/hiredis-0.14.1/make-n.log" "$C/hiredis-0.14.1/bear-3.1.1.compile_commands.json" hiredis-0.14.1
run expat-make-VERBOSE1 "$C/expat-2.5.0/make-VERBOSE1.log" "$C/expat-2.5.0/bear-3.1.1.make.compile_commands.json" expat-2.5.0/build-make
run gzip-make-n "$C/gzip-1.12/make-n.log.gz" "$C/gzip-1.12/../../gzip-1.12/compile_commands.json" src/gzip-1.12
run gzip-make-V1 "$C/gzip-1.12/make-V1.log.gz" "$C/gzip-1.12/../../gzip-1.12/compile_commands.json" src/gzip-1.12
