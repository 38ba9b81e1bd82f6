#!/usr/bin/env bash
# Cost of recording a build: plain vs tracekit (preload, ptrace) vs strace vs Bear,
# on the same workloads, in one go; prints medians and ratios.
#
#   bench/buildtrace.sh [--reps N] [--micro-n N] [--gzip] [--data DIR] [--tracekit BIN]
#                       [--variants 'plain tracekit-preload tracekit-cdb tracekit-ptrace strace-seccomp bear']
#
#   tracekit-cdb is `tracekit record build --compile-db` (preload): the trace and the
#   compilation database in one command, the like-for-like comparison with `bear --`.
#
#   micro   N x fork+exec of /bin/true from bash (default 2000): added microseconds per
#           process started, the issue's target being <= 100 us (Bear 3.1.1: ~30,000 us;
#           strace --seccomp-bpf: ~300 us; bench/inputs/buildtrace/BASELINES.md).
#   --gzip  also GNU gzip 1.12 `./configure` + `make -j2` (the issue's real build; target
#           <= 1.10x plain). The source comes from GZIP_ORIG=/path/to/gzip_1.12.orig.tar.xz
#           or is fetched with apt-get source (as tests/corpus/buildtrace/gzip-1.12/rebuild.sh
#           does). Each variant builds a fresh copy; variants are interleaved per repetition.
#
# Needs: a release tracekit (cargo build --release -p tracekit), strace, GNU time
# (/usr/bin/time); bear is used when installed (apt-get install bear). Run nothing else
# meanwhile: 2 CPUs leave no headroom, and single runs swing by +-30 %.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
REPS=3; N=2000; GZIP=0; ONLY=; DATA=${TMPDIR:-/tmp}/tracekit-bench-buildtrace
TK=${TRACEKIT:-${CARGO_TARGET_DIR:-$ROOT/target}/release/tracekit}
while [ $# -gt 0 ]; do
    case $1 in
        --reps) REPS=$2; shift 2 ;;
        --micro-n) N=$2; shift 2 ;;
        --gzip) GZIP=1; shift ;;
        --data) DATA=$2; shift 2 ;;
        --tracekit) TK=$2; shift 2 ;;
        --variants) ONLY=$2; shift 2 ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "buildtrace.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -x "$TK" ] || { echo "buildtrace.sh: no tracekit at $TK (cargo build --release -p tracekit, or --tracekit BIN)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "buildtrace.sh: needs GNU time (apt-get install time)" >&2; exit 2; }
TK=$(cd "$(dirname "$TK")" && pwd)/$(basename "$TK")
mkdir -p "$DATA"; DATA=$(cd "$DATA" && pwd)

VARIANTS="plain tracekit-preload tracekit-cdb tracekit-ptrace"
command -v strace >/dev/null && VARIANTS="$VARIANTS strace-seccomp"
command -v bear >/dev/null && VARIANTS="$VARIANTS bear"
VARIANTS=${ONLY:-$VARIANTS}
case " $VARIANTS " in *" plain "*) ;; *) VARIANTS="plain $VARIANTS" ;; esac

# prefix VARIANT DIR PHASE: the words before the command.
prefix() {
    case $1 in
        plain) ;;
        tracekit-preload) printf '%s\n' "$TK" record build -o "$2/$3.trace" -- ;;
        tracekit-cdb) printf '%s\n' "$TK" record build -o "$2/$3.trace" --compile-db "$2/$3.cdb.json" -- ;;
        tracekit-ptrace) printf '%s\n' "$TK" record build --method ptrace -o "$2/$3.trace" -- ;;
        strace-seccomp) printf '%s\n' strace -f -q --seccomp-bpf -e trace=execve,execveat -o "$2/$3.strace" -- ;;
        bear) printf '%s\n' bear --output "$2/$3.cdb.json" -- ;;
    esac
}

# timed VARIANT DIR PHASE CMD...: appends "wall user sys" to DIR/PHASE.time
timed() {
    local v=$1 d=$2 ph=$3; shift 3
    local pfx; mapfile -t pfx < <(prefix "$v" "$d" "$ph")
    /usr/bin/time -f '%e %U %S' -o "$d/$ph.time.tmp" "${pfx[@]}" "$@" > "$d/$ph.log" 2>&1 || {
        echo "  $v $ph failed (see $d/$ph.log)" >&2; }
    cat "$d/$ph.time.tmp" >> "$d/$ph.time"
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "== micro: $N x fork+exec of /bin/true, $REPS repetitions: $VARIANTS (load average $(load))"
for v in $VARIANTS; do rm -rf "$DATA/micro/$v"; mkdir -p "$DATA/micro/$v"; done
for rep in $(seq "$REPS"); do
    for v in $VARIANTS; do
        timed "$v" "$DATA/micro/$v" micro bash -c "for i in \$(seq $N); do /bin/true; done"
    done
done
echo "   load average after: $(load)"
plain_wall=$(cut -d' ' -f1 "$DATA/micro/plain/micro.time" | median)
plain_cpu=$(awk '{print $2+$3}' "$DATA/micro/plain/micro.time" | median)
printf '\n| variant | wall s | ratio | us per exec | added us per exec | added CPU us per exec |\n|---|---|---|---|---|---|\n'
for v in $VARIANTS; do
    w=$(cut -d' ' -f1 "$DATA/micro/$v/micro.time" | median)
    c=$(awk '{print $2+$3}' "$DATA/micro/$v/micro.time" | median)
    awk -v v="$v" -v w="$w" -v c="$c" -v pw="$plain_wall" -v pc="$plain_cpu" -v n="$N" 'BEGIN {
        printf "| %s | %.3f | %.2fx | %.0f | %.0f | %.0f |\n", v, w, w/pw, w/n*1e6, (w-pw)/n*1e6, (c-pc)/n*1e6 }'
done
# The traces must hold what ran: N+2 processes (bash, seq, N x true).
for v in tracekit-preload tracekit-ptrace; do
    [ -f "$DATA/micro/$v/micro.trace" ] || continue
    n=$("$TK" info --json "$DATA/micro/$v/micro.trace" | python3 -c 'import json,sys; print(json.load(sys.stdin)["details"]["process_records"])')
    echo "$v: last trace has $n processes (expected $((N + 2)))"
done

[ $GZIP = 1 ] || exit 0

ORIG=${GZIP_ORIG:-$DATA/dl/gzip_1.12.orig.tar.xz}
if [ ! -f "$ORIG" ]; then
    A=$DATA/apt; mkdir -p "$A/parts" "$A/lists/partial" "$A/cache/archives/partial" "$DATA/dl"
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' > "$A/parts/bookworm-src.sources"
    AO=(-o Dir::Etc::sourcelist=- -o Dir::Etc::sourceparts="$A/parts" -o Dir::State::Lists="$A/lists" -o Dir::Cache="$A/cache")
    apt-get "${AO[@]}" update >/dev/null
    (cd "$DATA/dl" && apt-get "${AO[@]}" source --download-only gzip=1.12-1 >/dev/null)
fi
echo "ce5e03e519f637e1f814011ace35c4f87b33c0bbabeec35baf5fbd3479e91956  $ORIG" | sha256sum -c --quiet

echo; echo "== gzip 1.12: ./configure + make -j2, $REPS repetitions: $VARIANTS (load average $(load))"
for v in $VARIANTS; do rm -rf "$DATA/gzip/$v"; mkdir -p "$DATA/gzip/$v"; done
for rep in $(seq "$REPS"); do
    for v in $VARIANTS; do
        d=$DATA/gzip/$v; src=$d/src; rm -rf "$src"; mkdir -p "$src"
        tar -C "$src" -xf "$ORIG"
        t=$src/gzip-1.12
        (cd "$t" && timed "$v" "$d" configure ./configure)
        (cd "$t" && timed "$v" "$d" make make -j2)
        printf '  rep %s %-16s configure %6.2f s  make %6.2f s\n' "$rep" "$v" \
            "$(tail -1 "$d/configure.time" | cut -d' ' -f1)" "$(tail -1 "$d/make.time" | cut -d' ' -f1)"
    done
done
echo "   load average after: $(load)"
pc=$(cut -d' ' -f1 "$DATA/gzip/plain/configure.time" | median)
pm=$(cut -d' ' -f1 "$DATA/gzip/plain/make.time" | median)
# CPU (user+sys of the tracer and everything it waited for), per repetition
# configure + make, median: steadier than wall time on a shared machine.
cpu_total() { paste -d' ' "$1/configure.time" "$1/make.time" | awk '{print $2+$3+$5+$6}' | median; }
pcpu=$(cpu_total "$DATA/gzip/plain")
printf '\n| variant | configure wall s | ratio | make -j2 wall s | ratio | total | ratio | total CPU s | ratio | compile entries (make) |\n|---|---|---|---|---|---|---|---|---|---|\n'
for v in $VARIANTS; do
    c=$(cut -d' ' -f1 "$DATA/gzip/$v/configure.time" | median)
    m=$(cut -d' ' -f1 "$DATA/gzip/$v/make.time" | median)
    cpu=$(cpu_total "$DATA/gzip/$v")
    e=-
    case $v in
        tracekit-cdb) e=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$DATA/gzip/$v/make.cdb.json" 2>/dev/null || echo -) ;;
        tracekit-*) (cd "$DATA/gzip/$v/src/gzip-1.12" && "$TK" build spec "$DATA/gzip/$v/make.trace" -o "$DATA/gzip/$v/cdb.json" 2>/dev/null) &&
            e=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$DATA/gzip/$v/cdb.json") ;;
        bear) e=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$DATA/gzip/$v/make.cdb.json" 2>/dev/null || echo -) ;;
    esac
    awk -v v="$v" -v c="$c" -v m="$m" -v pc="$pc" -v pm="$pm" -v e="$e" -v cpu="$cpu" -v pcpu="$pcpu" 'BEGIN {
        printf "| %s | %.2f | %.2fx | %.2f | %.2fx | %.2f | %.2fx | %.2f | %.2fx | %s |\n", v, c, c/pc, m, m/pm, c+m, (c+m)/(pc+pm), cpu, cpu/pcpu, e }'
done
