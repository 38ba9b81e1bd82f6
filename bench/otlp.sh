#!/usr/bin/env bash
# `tracekit trace2 listen --otlp-endpoint`: sessions forwarded per second,
# memory under 50 concurrent clients, and the spool round trip (an outage
# during a run, and a spool left for the next run), against the
# test collector (crates/tracekit/tests/otlp_collector.py --count-only:
# decodes every request with the official opentelemetry-proto code and
# counts spans and trace ids). git-ecosystem's trace2receiver cannot run
# side by side: it is a Go component of a custom OpenTelemetry Collector
# build, not packaged for Debian or PyPI.
#
# Load: the Trace2 corpus's EVENT sessions (real git 2.47 output), replayed
# ITER times with fresh SIDs (the host part of every SID component is the
# iteration), by CLIENTS forked clients, one connection per git process and
# one send() per line, as git writes them.
#
# usage: bench/otlp.sh [DIR] [ITER] [CLIENTS]
#   TRACEKIT=path/to/tracekit (default target/release/tracekit, built if missing)
# needs: python3 -m pip install opentelemetry-proto
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$(realpath -m "${1:-./bench-data}")/otlp
ITER=${2:-40}
CLIENTS=${3:-50}
TRACEKIT=${TRACEKIT:-$ROOT/target/release/tracekit}
COLLECTOR=$ROOT/crates/tracekit/tests/otlp_collector.py
[ -x "$TRACEKIT" ] || (cd "$ROOT" && cargo build --release -q -p tracekit)
rm -rf "$DIR" && mkdir -p "$DIR"

cat > "$DIR/replay.py" <<'PY'
import glob, json, os, socket, sys, time
sock, corpus, iters, clients = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
procs = {}                                   # sid -> lines, in file order
for path in sorted(glob.glob(corpus + "/*/event.jsonl")):
    if "12-brief" in path:
        continue
    for line in open(path, encoding="utf-8"):
        procs.setdefault(json.loads(line)["sid"], []).append(line)
sessions = {s.split("/")[0] for s in procs}
work = []
for it in range(iters):
    host = "H%08x" % (0x10000000 + it)
    for sid, lines in procs.items():
        new = sid.replace("H0a7c9cdf", host)
        work.append([l.replace(sid, new).encode() for l in lines])
print(len(sessions) * iters, len(work), sum(len(w) for w in work), flush=True)
if len(sys.argv) > 5 and sys.argv[5] == "count":
    sys.exit(0)
t0 = time.time()
pids = []
for c in range(clients):
    pid = os.fork()
    if pid == 0:
        for lines in work[c::clients]:
            s = socket.socket(socket.AF_UNIX)
            s.connect(sock)
            for l in lines:
                s.send(l)
            s.close()
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
print("%.3f" % (time.time() - t0), flush=True)
PY

collector() {  # collector PORT -> starts it in the background, waits for the port
    rm -f "$DIR/port"
    python3 "$COLLECTOR" serve "$DIR/port" "$DIR/count" --count-only --port "$1" &
    COLLECTOR_PID=$!
    while [ ! -s "$DIR/port" ]; do sleep 0.05; done
    PORT=$(cat "$DIR/port")
}
traces() { [ -s "$DIR/count" ] && awk '{print $3}' "$DIR/count" || echo 0; }
wait_traces() {  # wait_traces N: until the collector has N traces
    while [ "$(traces)" -lt "$1" ]; do sleep 0.05; done
}
listen() {  # listen LOG: the receiver in the background
    "$TRACEKIT" trace2 listen --socket "$DIR/t2.sock" --otlp-endpoint "http://127.0.0.1:$PORT" \
        --spool "$DIR/spool" --otlp-retry 1 --json >"$1.json" 2>"$1" &
    TK_PID=$!
    while [ ! -S "$DIR/t2.sock" ]; do sleep 0.02; done
}
cpu_s() { awk '{printf "%.2f", ($14+$15)/100}' "/proc/$1/stat"; }
hwm_mb() { awk '/VmHWM/{printf "%.1f", $2/1024}' "/proc/$1/status"; }

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
# 1. Throughput and memory, collector up.
collector 0
listen "$DIR/run1.log"
read -r SESSIONS PROCS LINES < <(python3 "$DIR/replay.py" "$DIR/t2.sock" "$ROOT/tests/corpus/trace2" "$ITER" "$CLIENTS" count)
t0=$(date +%s.%N)
python3 "$DIR/replay.py" "$DIR/t2.sock" "$ROOT/tests/corpus/trace2" "$ITER" "$CLIENTS" >/dev/null
wait_traces "$SESSIONS"
t1=$(date +%s.%N)
CPU=$(cpu_s $TK_PID); HWM=$(hwm_mb $TK_PID)
kill -TERM $TK_PID; wait $TK_PID
WALL=$(echo "$t1 - $t0" | bc)
echo "forwarded: $SESSIONS sessions ($PROCS processes, $LINES lines) from $CLIENTS clients"
echo "  wall ${WALL}s from first send to the last session at the collector: $(echo "$SESSIONS / $WALL" | bc) sessions/s"
echo "  receiver CPU (user+sys): ${CPU}s = $(echo "$SESSIONS / $CPU" | bc) sessions per CPU second"
echo "  receiver peak RSS: ${HWM} MiB"
grep "OTLP:" "$DIR/run1.log" | sed 's/^/  /'

spooled() {  # sessions in the spool, from the file names (<seq>-<sessions>s-<spans>sp.otlp)
    ls "$DIR/spool" 2>/dev/null | sed -n 's/^[0-9]*-\([0-9]*\)s-.*/\1/p' | awk '{s+=$1} END {print s+0}'
}

# 2. Outage during a run: the collector is away while the load arrives
#    (everything goes to the spool); then it comes back and the running
#    receiver replays the spool (it offers the oldest request at most
#    --otlp-retry, here 1 s, after the last failure).
kill $COLLECTOR_PID; wait $COLLECTOR_PID 2>/dev/null || true
rm -f "$DIR/count"
listen "$DIR/run2.log"
t0=$(date +%s.%N)
python3 "$DIR/replay.py" "$DIR/t2.sock" "$ROOT/tests/corpus/trace2" "$ITER" "$CLIENTS" >/dev/null
while [ "$(spooled)" -lt "$SESSIONS" ]; do sleep 0.05; done
t1=$(date +%s.%N)
SPOOL_BYTES=$(du -sb "$DIR/spool" | cut -f1)
collector "$PORT"
t2=$(date +%s.%N)
wait_traces "$SESSIONS"
t3=$(date +%s.%N)
CPU=$(cpu_s $TK_PID); HWM=$(hwm_mb $TK_PID)
kill -TERM $TK_PID; wait $TK_PID
kill $COLLECTOR_PID; wait $COLLECTOR_PID 2>/dev/null || true
echo "outage in a run: $SESSIONS sessions spooled ($SPOOL_BYTES bytes) $(echo "$t1 - $t0" | bc)s after the first send;"
echo "  collector back: all replayed $(echo "$t3 - $t2" | bc)s after it listens again; receiver CPU ${CPU}s, peak RSS ${HWM} MiB"
grep "OTLP:" "$DIR/run2.log" | tail -1 | sed 's/^/  /'

# 3. Spool round trip across runs: collector away, SIGTERM spools; collector
#    back, a new receiver replays the spool at start.
rm -f "$DIR/count"
listen "$DIR/run3.log"
python3 "$DIR/replay.py" "$DIR/t2.sock" "$ROOT/tests/corpus/trace2" "$ITER" "$CLIENTS" >/dev/null
sleep 1
kill -TERM $TK_PID; wait $TK_PID
grep "OTLP:" "$DIR/run3.log" | tail -1 | sed 's/^/  spooled: /'
SPOOL_BYTES=$(du -sb "$DIR/spool" | cut -f1)
collector "$PORT"
t0=$(date +%s.%N)
listen "$DIR/run4.log"
wait_traces "$SESSIONS"
t1=$(date +%s.%N)
kill -TERM $TK_PID; wait $TK_PID
kill $COLLECTOR_PID; wait $COLLECTOR_PID 2>/dev/null || true
echo "spool round trip: $SESSIONS sessions ($SPOOL_BYTES bytes spooled) replayed in $(echo "$t1 - $t0" | bc)s from the receiver's start"
grep "OTLP:" "$DIR/run4.log" | tail -1 | sed 's/^/  /'
