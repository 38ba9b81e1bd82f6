#!/usr/bin/env bash
# Receiver throughput: `tracekit trace2 listen` against the corpus's
# uds_listener.py (the Python select() receiver used to capture cases 14/15;
# the Go trace2receiver is not packaged for Debian).
#
# CLIENTS concurrent clients (like git processes) each connect to the stream
# socket and send LINES EVENT lines of ~240 bytes with one send() per line,
# exactly as git writes them. Both receivers get the same load; compare CPU
# time (user+sys) of the receiver process, the wall time from the first send
# to the receiver's exit, and check that every line arrived.
#
# usage: bench/trace2-listen.sh [DIR] [CLIENTS] [LINES]
#   TRACEKIT=path/to/tracekit (default: target/release/tracekit, built if missing)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$(realpath -m "${1:-./bench-data}")/trace2-listen
CLIENTS=${2:-50}
LINES=${3:-20000}
TRACEKIT=${TRACEKIT:-$ROOT/target/release/tracekit}
PEER=$ROOT/tests/corpus/trace2/uds_listener.py
if [ ! -x "$TRACEKIT" ]; then
    (cd "$ROOT" && cargo build --release -p tracekit)
fi
command -v /usr/bin/time >/dev/null || { apt-get install -y time >/dev/null; }
mkdir -p "$DIR"
rm -rf "$DIR"/tk-out "$DIR"/py-out "$DIR"/*.sock "$DIR"/tk.pid

cat > "$DIR/flood.py" <<'PY'
import os, socket, sys, time
path, clients, lines = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for _ in range(200):                      # wait for the receiver
    try:
        socket.socket(socket.AF_UNIX).connect(path); break
    except OSError:
        time.sleep(0.05)
t0 = time.time()
pids = []
for c in range(clients):
    pid = os.fork()
    if pid == 0:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        sid = "20261121T000000.%06dZ-H0a7c9cdf-P%08x" % (c, os.getpid())
        pad = "x" * 120
        for i in range(lines):
            s.send(('{"event":"data","sid":"%s","thread":"main","t_abs":%d.000001,'
                    '"key":"k","value":"%s"}\n' % (sid, i, pad)).encode())
        s.close()
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
print("%.3f" % t0)
PY

count_lines() { find "$1" -type f "${@:2}" -exec cat {} + | wc -l; }
cpu() { awk -F': ' '/User time/{u=$2} /System time/{s=$2} /Maximum resident/{r=$2} END{printf "%.2f %d", u+s, r}' "$1"; }

# tracekit
# (the shell execs tracekit, so the pid it writes is tracekit's own)
/usr/bin/time -v -o "$DIR/tk.time" sh -c 'echo $$ > "$1"; shift; exec "$@"' sh "$DIR/tk.pid" \
    "$TRACEKIT" trace2 listen --socket "$DIR/tk.sock" --dir "$DIR/tk-out" --grace 0 --quiet &
timed=$!
t0=$(python3 "$DIR/flood.py" "$DIR/tk.sock" "$CLIENTS" "$LINES")
kill -TERM "$(cat "$DIR/tk.pid")"; wait $timed
tk_wall=$(python3 -c "import time; print('%.2f' % (time.time() - $t0))")
tk_lines=$(count_lines "$DIR/tk-out")

# uds_listener.py (stops when OUT/STOP appears, polled every 0.2 s)
mkdir -p "$DIR/py-out"
/usr/bin/time -v -o "$DIR/py.time" python3 "$PEER" stream "$DIR/py.sock" "$DIR/py-out" 3600 &
py=$!
t0=$(python3 "$DIR/flood.py" "$DIR/py.sock" "$CLIENTS" "$LINES")
touch "$DIR/py-out/STOP"; wait $py
py_wall=$(python3 -c "import time; print('%.2f' % (time.time() - $t0))")
py_lines=$(wc -l < "$DIR/py-out/combined.txt")

read -r tk_cpu tk_rss <<<"$(cpu "$DIR/tk.time")"
read -r py_cpu py_rss <<<"$(cpu "$DIR/py.time")"
expected=$((CLIENTS * LINES))
printf 'receiver\tcpu_s\twall_s\tpeak_rss_kb\tlines\n'
printf 'tracekit\t%s\t%s\t%s\t%s\n' "$tk_cpu" "$tk_wall" "$tk_rss" "$tk_lines"
printf 'uds_listener.py\t%s\t%s\t%s\t%s\n' "$py_cpu" "$py_wall" "$py_rss" "$py_lines"
python3 -c "print('cpu ratio (peer/tracekit): %.1fx' % ($py_cpu / max($tk_cpu, 0.01)))"
[ "$tk_lines" -eq "$expected" ] || { echo "tracekit lost lines: $tk_lines of $expected" >&2; exit 1; }
[ "$py_lines" -eq "$expected" ] || echo "note: uds_listener.py wrote $py_lines of $expected" >&2
