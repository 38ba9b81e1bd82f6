#!/usr/bin/env bash
# Regenerates the llvm-xray 14 goldens of this folder. The inputs are the
# YAML traces of ../xray (written by `llvm-xray convert -f yaml`) with the
# header's version set to 1, the only version llvm-xray 14 reads back from
# YAML; v1/<name>.yaml is made here and not kept (the test derives it the
# same way). Needs llvm-xray-14 (Debian: llvm-14).
set -u
cd "$(dirname "$0")"
tool=${LLVM_XRAY:-llvm-xray-14}
mkdir -p v1 golden
: > COMMANDS.txt
for f in $(cd ../xray && ls */*.yaml | grep -v -e instr_map -e examples/extract); do
  name=$(echo "$f" | tr '/' '_')
  name=${name%.yaml}
  sed -e 's/^  version: *[0-9]*$/  version:         1/' "../xray/$f" > "v1/$name.yaml"
  i=0
  for cmd in "account" "account -k -d" "account -k -format=csv -sort=sum -sortorder=dsc" \
             "stack" "stack -k -per-thread-stacks" "stack -k -all-stacks -stack-format=flame" \
             "stack -k -aggregate-threads -all-stacks -stack-format=flame -aggregation-type=count" \
             "graph -k -e sum -c sum -v count -b count" "graph -k -d -e 99p -v med"; do
    i=$((i + 1))
    out="golden/$name.$i.txt"
    $tool $cmd "v1/$name.yaml" > "$out" 2>/dev/null
    echo "$out: rc=$? :: llvm-xray $cmd $name.yaml" >> COMMANDS.txt
  done
  # Conversions of the smaller traces only (their goldens are as big as
  # the traces).
  [ "$(wc -c < "v1/$name.yaml")" -lt 20000 ] || continue
  for cmd in "convert -f yaml" "convert -f trace_event" "convert -f yaml -sort=false"; do
    i=$((i + 1))
    out="golden/$name.$i.txt"
    $tool $cmd "v1/$name.yaml" > "$out" 2>/dev/null
    echo "$out: rc=$? :: llvm-xray $cmd $name.yaml" >> COMMANDS.txt
  done
done
rm -rf v1
