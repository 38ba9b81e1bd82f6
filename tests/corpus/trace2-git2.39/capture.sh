#!/bin/bash
# Captures this folder's cases with Debian bookworm's git (/usr/bin/git, 2.39.x).
# Run as root from the repository root:  bash tests/corpus/trace2-git2.39/capture.sh
# It runs in a private mount namespace where a scratch directory is bound to
# /home/dev/t2c (the path the git 2.47 corpus was captured under), so no path
# needs rewriting afterwards. The host name must be `vm` (SID hash H0a7c9cdf).
set -u
OUT=$(cd "$(dirname "$0")" && pwd)
if [ -z "${T2C_INSIDE:-}" ]; then
    SCRATCH=$(mktemp -d)
    exec env T2C_INSIDE=1 T2C_SCRATCH="$SCRATCH" unshare --mount --propagation private \
        bash -c 'mkdir -p /home/dev/t2c && mount --bind "$T2C_SCRATCH" /home/dev/t2c && exec bash "$0"' "$0"
fi

# The environment of the 2.47 corpus: nothing of the caller's git setup.
for v in $(env | sed -n 's/^\(GIT_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
export W=/home/dev/t2c HOME=/home/dev/t2c/home GIT_CONFIG_NOSYSTEM=1 LANG=C TZ=UTC
export PATH=/usr/bin:/bin
unset LC_ALL LANGUAGE
mkdir -p "$HOME"
git config --global user.name "T2 Capture"
git config --global user.email t2@example.com
git config --global init.defaultBranch main
git --version

# Fixtures (not traced): `src` with a topic branch and big.txt, `big` with many files.
cd "$W"
git init -q src && (
    cd src
    seq 1 2000 > big.txt
    for i in 1 2 3 4 5 6; do echo "c$i" > "f$i"; git add .; git commit -q -m "commit $i"; done
    git branch topic
    git checkout -q topic; echo topic > t; git add t; git commit -q -m topic; git checkout -q main
)
git init -q big && (
    cd big
    mkdir d; for i in $(seq 1 6000); do echo "$i" > "d/file-with-a-longish-name-$i"; done
    git add . && git commit -q -m big
    for i in $(seq 1 1500); do git commit -q --allow-empty -m "e$i"; done
)

c01 () { git init repo1 && cd repo1; for i in $(seq 1 20); do echo "line $i" > "f$i.txt"; done; git add .; git commit -m "initial"; echo change >> f1.txt; git commit -am "second"; git -c core.fsync=all commit --allow-empty -m "fsync=all (emits fsync counter)"; GIT_EDITOR=true git commit --amend --allow-empty; }
c04 () { git clone file://$W/src clone1; git clone --depth 2 file://$W/src clone-shallow; }
c07 () { cd src; git config alias.st status; git config alias.st2 st; git config alias.hello '!echo hello from shell alias; git rev-parse --short HEAD'; git st --short; git st2 --short; git hello; }
c08 () { cd src; git checkout no-such-branch; git status --bogus-option; git notacommand; git -C /nonexistent status; git commit -m "nothing to commit"; git merge-base; echo "local change" >> big.txt; git checkout topic; git checkout -- big.txt; git -c core.abbrev=nope log -1; }
c09 () { git init -q hooks && cd hooks; printf '#!/bin/sh\necho pre-commit ran\n' > .git/hooks/pre-commit; printf '#!/bin/sh\necho post-commit ran\ngit rev-parse --short HEAD\n' > .git/hooks/post-commit; chmod +x .git/hooks/*; echo a > a && git add a && git commit -m "with hooks"; printf '#!/bin/sh\necho pre-commit refuses >&2\nexit 1\n' > .git/hooks/pre-commit; echo b > b && git add b && git commit -m "refused by hook"; git init -q --bare ../hooks-remote.git; printf '#!/bin/sh\ncat >/dev/null\necho pre-receive ok\n' > ../hooks-remote.git/hooks/pre-receive; chmod +x ../hooks-remote.git/hooks/*; git remote add origin ../hooks-remote.git; git push origin main; }
brief_body () { git init -q brief && cd brief; echo a > a && git add a && git commit -q -m a; git status --short; git clone -q file://$W/src ../brief-clone; git checkout nope; git st 2> /dev/null; }
c17 () { cd big; git ls-files | head -1; git log --format=%H --all | head -1; cd ../src; echo 0000 | git-shell -c "git-upload-pack '$W/src'" | head -c 100; echo; }

run () { # run CASE FUNCTION [brief]
    local case=$1 fn=$2 dir="$OUT/$1"
    rm -rf "$dir"; mkdir -p "$dir"
    (
        cd "$W"
        export GIT_TRACE2=$dir/normal.log GIT_TRACE2_PERF=$dir/perf.log GIT_TRACE2_EVENT=$dir/event.jsonl
        if [ "${3:-}" = brief ]; then export GIT_TRACE2_BRIEF=1 GIT_TRACE2_PERF_BRIEF=1 GIT_TRACE2_EVENT_BRIEF=1; fi
        $fn
    ) > "$dir/output.txt" 2>&1
    # The trace files name themselves by absolute path only in argv; the
    # repository path is the same on every machine.
    sed -i "s#$OUT#/home/dev/t2c/out#g" "$dir"/*
    { echo "# $case"; echo; echo "Captured with $(git --version) by capture.sh (function \`$fn\`${3:+, all *_BRIEF variants on})."; echo; echo '```bash'; declare -f "$fn"; echo '```'; } > "$dir/README.md"
}
run 01-init-add-commit c01
run 04-clone-local c04
run 07-alias c07
run 08-errors c08
run 09-hooks c09
run 12-brief brief_body brief
run 17-signal-exec c17
