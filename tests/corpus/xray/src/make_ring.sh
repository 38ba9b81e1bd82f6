#!/usr/bin/env bash
# Builds ring.c and records ring/ring.fdr-ring.xray: FDR mode with
# buffer_max=6 (the runtime recycles its buffers: the log keeps only the
# newest ones), plus llvm-xray 14's outputs on it (it fails on such logs,
# even with -k). Needs clang-14, libclang-rt-14-dev, llvm-14.
set -u
SRC=$(cd "$(dirname "$0")" && pwd)
OUT=$SRC/../ring
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
MAP="-ffile-prefix-map=$SRC=/src/xray-samples -fdebug-prefix-map=$SRC=/src/xray-samples"
XR="-fxray-instrument -fxray-instruction-threshold=1"
cd "$SRC"
clang-14 -O0 -g $MAP $XR -c ring.c -o "$TMP/ring.o"
clang++-14 -O0 -g $MAP $XR -std=c++17 -c xray_driver.cc -o "$TMP/driver.o"
clang++-14 $XR "$TMP/ring.o" "$TMP/driver.o" -lpthread -o "$OUT/ring"
cd "$OUT"
rm -f ring.fdr-ring.* xray-log.ring.*
env XRAY_OPTIONS="patch_premain=true xray_mode=xray-fdr xray_logfile_base=$TMP/" \
  XRAY_FDR_OPTIONS="func_duration_threshold_us=0 buffer_size=4096 buffer_max=6" \
  ./ring > /dev/null
mv "$(ls "$TMP"/ring.* | head -1)" ring.fdr-ring.xray
: > GOLDEN_COMMANDS.txt
g() {  # g OUTFILE command...
  local out=$1; shift
  "$@" > "$out" 2> "$out.stderr"; local rc=$?
  echo "ring/$out: rc=$rc :: $*" >> GOLDEN_COMMANDS.txt
  [ -s "$out.stderr" ] || rm -f "$out.stderr"
}
t=ring.fdr-ring.xray
g ring.fdr-ring.account.txt llvm-xray-14 account -m ring "$t"
g ring.fdr-ring.account-k.txt llvm-xray-14 account -k -m ring "$t"
g ring.fdr-ring.stack-k.txt llvm-xray-14 stack -k -m ring "$t"
g ring.fdr-ring.graph-k.dot llvm-xray-14 graph -k -m ring "$t"
g ring.fdr-ring.fdr-dump.txt llvm-xray-14 fdr-dump -verify "$t"
