#!/bin/bash
# Captures this folder's trace with the git on PATH (git 2.47.3, in
# /usr/local/bin on the capture machine). Run from anywhere:
#     bash tests/corpus/trace2/24-maintenance-detach/capture.sh
# The scratch repositories are made afresh in /tmp/t2c-detach; the host name
# was `vm` (SID hash H0a7c9cdf) like for the rest of the corpus.
set -eu
OUT=$(cd "$(dirname "$0")" && pwd)
# Nothing of the caller's git setup.
for v in $(env | sed -n 's/^\(GIT_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export W=/tmp/t2c-detach
export HOME=$W/home GIT_CONFIG_NOSYSTEM=1 LANG=C TZ=UTC PATH=/usr/local/bin:/usr/bin:/bin
unset LC_ALL LANGUAGE
rm -rf "$W"
mkdir -p "$HOME"
cd "$W"
git config --global user.name "T2 Capture"
git config --global user.email t2@example.com
git config --global init.defaultBranch main

# Fixtures, untraced: `src` with three commits; `clone`, a clone of it, set
# up so that auto maintenance runs its gc task on the next commit: with
# gc.auto=1, "too many loose objects" means more than one in objects/17/,
# and two new files whose blobs hash to 17... are staged.
git init -q src
(cd src && for i in 1 2 3; do echo "line $i" >> a.txt; git add a.txt; git commit -qm "commit $i"; done)
git clone -q "$W/src" clone
cd clone
git config maintenance.auto true
git config gc.auto 1
n=0
for i in $(seq 1 5000); do
    h=$(printf 'blob %d\n' "$i" | git hash-object --stdin)
    case $h in 17*) printf 'blob %d\n' "$i" > "f$i.txt"; n=$((n + 1)) ;; esac
    [ "$n" -ge 2 ] && break
done
git add .

# Waits until the detached maintenance child is done (it holds the lock).
settle () {
    sleep 1
    while [ -e "$W/clone/.git/objects/maintenance.lock" ] || [ -e "$W/src/.git/objects/maintenance.lock" ]; do
        sleep 0.2
    done
    sleep 1
}

export GIT_TRACE2=$OUT/normal.log GIT_TRACE2_PERF=$OUT/perf.log GIT_TRACE2_EVENT=$OUT/event.jsonl
rm -f "$GIT_TRACE2" "$GIT_TRACE2_PERF" "$GIT_TRACE2_EVENT"
{
    # 1. A commit in `clone`: `maintenance run --auto --detach` forks, and
    #    the detached child runs gc (pack-refs, reflog, repack, prune, ...).
    git commit -m "two files"
    settle
    # 2. A commit in `src` (its detached child finds nothing to do) ...
    (cd "$W/src" && echo "line 4" >> a.txt && git commit -qam "commit 4")
    settle
    # 3. ... fetched into `clone` (again a detached child with nothing to do).
    git fetch
    settle
} > "$OUT/output.txt" 2>&1
