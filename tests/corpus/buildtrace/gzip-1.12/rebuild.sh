#!/usr/bin/env bash
# Rebuild GNU gzip 1.12 exactly as for the reference files next to this script, optionally
# under a build recorder, so that its output can be compared with them.
#
#   rebuild.sh DEST [-- RECORDER-PREFIX...]
#       Unpack gzip 1.12 into DEST/home-dev/src/gzip-1.12 (a fresh copy each time), run
#       ./configure untraced, then RECORDER-PREFIX make -j2, both in the reference
#       environment (below); give the recorder by absolute path (PATH is reset).  Example:
#         rebuild.sh $PWD/gz -- /path/to/tracekit record build -o $PWD/gz/build.trace --
#       In the reference files DEST/home-dev is written /home/dev: compare with
#         compare_build.py cdb   compile_commands.json CDB   --map DEST/home-dev=/home/dev
#         compare_build.py execs execs.jsonl         TRACE --map DEST/home-dev=/home/dev
#       (compare_build.py is in ../../../../bench/inputs/buildtrace/).
#   rebuild.sh DEST --reference
#       Regenerate the reference files into DEST/reference with the paths rewritten:
#       Bear 3.1.1 events + compile_commands.json from one make run, the strace exec list
#       (and raw log) from a second make run of an identical configured copy.
#
# DEST must be an absolute or relative directory path without spaces or '#'.
# The source: GZIP_ORIG=/path/to/gzip_1.12.orig.tar.xz, else it is fetched with
# `apt-get source --download-only gzip=1.12-1` through a private deb-src list under DEST/apt.
# The reference environment: env -i with HOME=DEST/home-dev, PATH=/usr/local/bin:/usr/bin:/bin,
# LANG=C.UTF-8, SHELL=/bin/bash, USER=dev, LOGNAME=dev, TERM=dumb, TMPDIR=DEST/home-dev/tmpdir,
# PWD=<tree>.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { sed -n '2,26p' "$0"; exit 2; }
mkdir -p "$1"; DEST=$(cd "$1" && pwd -P); shift
case $DEST in *" "*|*"#"*) echo "rebuild.sh: DEST must not contain spaces or '#'" >&2; exit 2 ;; esac
MODE=record; PREFIX=()
if [ $# -gt 0 ]; then
    case $1 in
        --reference) MODE=reference ;;
        --) shift; PREFIX=("$@") ;;
        *) echo "rebuild.sh: expected -- or --reference, got $1" >&2; exit 2 ;;
    esac
fi

ORIG_SHA256=ce5e03e519f637e1f814011ace35c4f87b33c0bbabeec35baf5fbd3479e91956
ORIG=${GZIP_ORIG:-$DEST/dl/gzip_1.12.orig.tar.xz}
if [ ! -f "$ORIG" ]; then
    A=$DEST/apt; mkdir -p "$A/parts" "$A/lists/partial" "$A/cache/archives/partial" "$DEST/dl"
    cat > "$A/parts/bookworm-src.sources" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    AO=(-o Dir::Etc::sourcelist=- -o Dir::Etc::sourceparts="$A/parts"
        -o Dir::State::Lists="$A/lists" -o Dir::Cache="$A/cache")
    apt-get "${AO[@]}" update >/dev/null
    (cd "$DEST/dl" && apt-get "${AO[@]}" source --download-only gzip=1.12-1 >/dev/null)
fi
echo "$ORIG_SHA256  $ORIG" | sha256sum -c --quiet

H=$DEST/home-dev
T=$H/src/gzip-1.12
ENVV=(env -i HOME="$H" PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 SHELL=/bin/bash USER=dev
      LOGNAME=dev TERM=dumb TMPDIR="$H/tmpdir" PWD="$T")
fresh_configured_tree() {
    rm -rf "$H"; mkdir -p "$H/src" "$H/tmpdir"
    tar -C "$H/src" -xf "$ORIG"
    (cd "$T" && "${ENVV[@]}" ./configure > "$DEST/log.configure.txt" 2>&1)
}

if [ $MODE = record ]; then
    fresh_configured_tree
    set +e
    (cd "$T" && "${ENVV[@]}" "${PREFIX[@]}" make -j2 > "$DEST/log.make.txt" 2>&1)
    rc=$?
    set -e
    echo "make exit status: $rc (log: $DEST/log.make.txt)"
    echo "tree: $T   (written /home/dev/src/gzip-1.12 in the reference files: --map $H=/home/dev)"
    exit $rc
fi

# ---------------------------------------------------------------- --reference
OUT=$DEST/reference; RAW=$DEST/raw; rm -rf "$OUT" "$RAW"; mkdir -p "$OUT" "$RAW"
fresh_configured_tree
cp -a "$T" "$DEST/configured-copy"
(cd "$T" && "${ENVV[@]}" bear intercept --output "$RAW/events.json" -- make -j2 > "$RAW/log.make-bear.txt" 2>&1)
(cd "$T" && "${ENVV[@]}" bear citnames --run-checks --input "$RAW/events.json" --output "$RAW/compile_commands.json")
rm -rf "$T"; mv "$DEST/configured-copy" "$T"
(cd "$T" && "${ENVV[@]}" strace -f -q --seccomp-bpf -y -s 65536 \
    -e trace=execve,execveat,clone,clone3,fork,vfork,chdir,fchdir \
    -o "$RAW/strace-make.txt" -- make -j2 > "$RAW/log.make-strace.txt" 2>&1)
python3 "$HERE/../../../../bench/inputs/buildtrace/strace_execs.py" --cwd "$T" "$RAW/strace-make.txt" > "$RAW/execs.jsonl"
for f in compile_commands.json events.json execs.jsonl strace-make.txt; do
    sed "s#$H#/home/dev#g" "$RAW/$f" > "$OUT/$f"
done
mv "$OUT/events.json" "$OUT/bear-events.jsonl"
xz -T1 -9 -f "$OUT/strace-make.txt"
python3 "$HERE/../../../../bench/inputs/buildtrace/strace_execs.py" --cwd /home/dev/src/gzip-1.12 --stats "$OUT/strace-make.txt.xz"
ls -l "$OUT"
