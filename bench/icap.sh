#!/bin/bash
# The captive portal's ICAP service (`doorman serve` with squid.intercept.httpPort set) against c-icap's echo
# service, with the kit's driver (bench-icap.sh → lib/icap-bench.js: K persistent connections, one REQMOD in
# flight on each, what Squid sends for a GET, X-Client-IP cycling over 10,000 addresses 10.0.0.0-10.0.39.15).
# Issue 7's target: at least 0.8x c-icap at K=8 and K=32, p99 under 2 ms.
#   bench/icap.sh
# Each round runs, one after the other on the same machine, at K = CONNS:
#   c-icap 0.5.10 echo      the anchor (answers 204 without looking at anything)
#   doorman 204 identified  serve with the portal on (agreement mode: authentication's decisions, no directory
#                           needed), its DB holding SESSIONS live sessions on exactly the driver's addresses:
#                           the real decision (one session lookup) → 204
#   doorman 302 unidentified another serve whose DB holds SESSIONS sessions on other addresses: the lookup
#                           misses → HTTP 302 to {baseUrl}portal/?url=… inside an ICAP 200
#   node floor              bench/lib/icap-floor.ts: parses nothing, answers a constant 204 (what node:net
#                           alone costs: the ceiling for a single-threaded Node ICAP service here)
# First the ICAP service's memory with ICAP_OPEN (1,000) connections open, on the fresh process
# (bench/lib/icap-connections.ts: VmRSS of serve before, with all open and answered once, and after closing
# them; the process is the whole of serve, web app included).
# env: RUNS=3 DURATION=5 CONNS="1 8 32" SESSIONS=10000 ICAP_OPEN=1000 CICAP_PORT=1345
#      ICAP_PORT_204=1354 ICAP_PORT_302=1355 WEB_PORT_204=8192 WEB_PORT_302=8193 FLOOR_PORT=1356
#      ICAP_WORKERS=N: icap.workers in both serves' configs (unset or 0: serve's default, the ICAP service
#      in serve's own thread; N: N worker threads)
#      FLOOR=0: leave the Node floor out
#      PROFILE=1: the 204 server under node --cpu-prof; prints where its time went (results/icap.profile.txt)
set -euo pipefail
RUNS=${RUNS:-3}
. "$(dirname "$0")/lib/env.sh"
start_monitor icap
export DURATION=${DURATION:-5} CONNS=${CONNS:-1 8 32}
SESSIONS=${SESSIONS:-10000}; ICAP_OPEN=${ICAP_OPEN:-1000}; PROFILE=${PROFILE:-0}
CICAP_PORT=${CICAP_PORT:-1345}
P204=${ICAP_PORT_204:-1354}; P302=${ICAP_PORT_302:-1355}; W204=${WEB_PORT_204:-8192}; W302=${WEB_PORT_302:-8193}
PFLOOR=${FLOOR_PORT:-1356}; FLOOR=${FLOOR:-1}
WORKERS_JSON=${ICAP_WORKERS:+, \"workers\": $ICAP_WORKERS}
[ "$SESSIONS" -le 65536 ] || { echo "SESSIONS is capped at 65,536 (the driver's addresses)" >&2; exit 2; }
D=$SCRATCH/icap-doorman
OUT=$RESULTS/icap.jsonl
S204= S302= SFLOOR=
trap 'stop_pid "$S204" || true; stop_pid "$S302" || true; stop_pid "$SFLOOR" || true' EXIT
for p in "$CICAP_PORT" "$P204" "$P302" "$W204" "$W302" "$PFLOOR"; do need_free_port "$p"; done
rm -rf "$D"; mkdir -p "$D/prof"

# setup NAME WEB_PORT ICAP_PORT FIRST: a config, SESSIONS sessions on keys FIRST.., agreement mode
setup() {
  local name=$1 web=$2 icap=$3 first=$4
  mkdir -p "$D/$name/state"
  cat > "$D/$name/doorman.json" <<JSON
{
  "baseUrl": "http://127.0.0.1:$web/",
  "listen": [{ "host": "127.0.0.1", "port": $web }],
  "stateDir": "$D/$name/state",
  "squid": { "intercept": { "httpPort": 3129 } },
  "icap": { "host": "127.0.0.1", "port": $icap, "maxConnections": $((ICAP_OPEN + 100))$WORKERS_JSON }
}
JSON
  chmod 644 "$D/$name/doorman.json"; chmod 755 "$D/$name"
  echo "  $name: $("$NODE" "$BENCH/lib/make-sessions.ts" --db "$D/$name/state/doorman.db" --count "$SESSIONS" --first "$first")"
  if [ "$(id -u)" = 0 ]; then chown -R proxy:proxy "$D/$name/state" "$D/prof"; fi
  chmod 700 "$D/$name/state"; chmod 600 "$D/$name/state/doorman.db"
  # Usage Agreement Only: its ICAP decisions are authentication's (a 302 for a device without a session), and it
  # needs no directory, which portal set requires for authentication.
  echo "Be kind." > "$D/policy.txt"
  "$ROOT/bin/doorman" portal set --mode agreement --policy-file "$D/policy.txt" --idle-minutes 60 \
    --config "$D/$name/doorman.json" > /dev/null
}
echo "=== session DBs"
setup identified "$W204" "$P204" 0
setup unidentified "$W302" "$P302" 65536      # keys 10.1.0.0 onwards: none of the driver's addresses

echo "=== servers"
if [ "$PROFILE" = 1 ]; then
  "$NODE" --cpu-prof --cpu-prof-dir="$D/prof" "$ROOT/cli/main.ts" serve --config "$D/identified/doorman.json" 2> "$D/identified/serve.log" &
else
  "$ROOT/bin/doorman" serve --config "$D/identified/doorman.json" 2> "$D/identified/serve.log" &   # bin/doorman execs node: $! is the server
fi
S204=$!
"$ROOT/bin/doorman" serve --config "$D/unidentified/doorman.json" 2> "$D/unidentified/serve.log" &
S302=$!
if [ "$FLOOR" = 1 ]; then
  "$NODE" "$BENCH/lib/icap-floor.ts" --port "$PFLOOR" &
  SFLOOR=$!
fi
wait_port "$P204"; wait_port "$P302"
if [ "$FLOOR" = 1 ]; then wait_port "$PFLOOR"; fi
# one request each through the kit's driver, to check the answers are the ones measured
check() { # check PORT EXPECTED_STATUS_KEY
  local r; r=$(node "$KIT/lib/icap-bench.js" --port "$1" --service reqmod --connections 1 --duration 1 --max-requests 20 --label check)
  echo "  :$1 $(echo "$r" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("statuses", r["statuses"], "sample", repr(r.get("sample", ""))[:160])')"
}
check "$P204"; check "$P302"
printf 'REQMOD icap://127.0.0.1:%s/reqmod ICAP/1.0\r\nHost: 127.0.0.1\r\nEncapsulated: req-hdr=0, null-body=60\r\nAllow: 204\r\nX-Client-IP: 10.0.0.1\r\n\r\nGET http://www.example.test/index.html HTTP/1.1\r\nHost: x\r\n\r\n' "$P302" \
  | timeout 2 python3 -c 'import socket,sys; s=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); s.sendall(sys.stdin.buffer.read()); s.settimeout(1)
d=b""
try:
  while b"Location" not in d: d+=s.recv(4096)
except Exception: pass
print("  302 answer:", [l for l in d.decode("latin1").split("\r\n") if l.startswith(("ICAP/","HTTP/","Location"))])' "$P302" || true

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# doorman LABEL PORT PID: the kit's driver at each K in turn; the server's CPU time per request (from /proc,
# quiet wait and the driver's start included, so a slight overestimate) is added to the kit's record
doorman() {
  local label=$1 port=$2 pid=$3 k t0 t1
  for k in $CONNS; do
    t0=$(ticks "$pid")
    CONNS=$k RUNS=1 ICAP_ARGS="--ips $SESSIONS" "$KIT/bench-icap.sh" "$label" 127.0.0.1 "$port" reqmod | grep -E '^ +(doorman|node)' || true
    t1=$(ticks "$pid")
    python3 - "$OUT" "$t0" "$t1" "$(getconf CLK_TCK)" <<'PY'
import json, sys
path, t0, t1, hz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
lines = open(path).read().splitlines()
r = json.loads(lines[-1])
r["server_cpu_us_per_req"] = round((t1 - t0) / hz * 1e6 / max(r.get("requests") or 1, 1), 1)
lines[-1] = json.dumps(r)
open(path, "w").write("\n".join(lines) + "\n")
print("    server CPU %.1f us/request" % r["server_cpu_us_per_req"])
PY
  done
}

# first, on a fresh process (after the load runs the heap has grown and new connections reuse it)
echo "=== memory with $ICAP_OPEN open ICAP connections (serve pid $S204, fresh)"
"$NODE" "$BENCH/lib/icap-connections.ts" --port "$P204" --pid "$S204" --count "$ICAP_OPEN" \
  --label "doorman serve, $ICAP_OPEN open ICAP connections" | tee -a "$RESULTS/icap-memory.jsonl"

for run in $(seq 1 "$RUNS"); do
  echo "=== round $run/$RUNS"
  RUNS=1 ICAP_PORT=$CICAP_PORT "$KIT/bench-icap.sh" | grep -E '^ +c-icap' || true
  doorman "doorman 204 identified ($SESSIONS sessions)" "$P204" "$S204"
  doorman "doorman 302 unidentified ($SESSIONS sessions)" "$P302" "$S302"
  if [ "$FLOOR" = 1 ]; then doorman "node floor (constant 204, no parsing)" "$PFLOOR" "$SFLOOR"; fi
done


stop_pid "$S302" || true; S302=
stop_pid "$S204" || true; S204=
stop_pid "$SFLOOR" || true; SFLOOR=
if [ "$PROFILE" = 1 ]; then
  sleep 1
  prof=$(ls -t "$D"/prof/*.cpuprofile 2>/dev/null | head -1)
  if [ -n "$prof" ]; then
    cp "$prof" "$RESULTS/icap.cpuprofile"
    "$NODE" "$BENCH/lib/cpuprofile-top.ts" "$RESULTS/icap.cpuprofile" --root "$ROOT" --top 30 | tee "$RESULTS/icap.profile.txt"
  else
    echo "  no CPU profile was written (server killed?)" >&2
  fi
fi
echo
tables "$OUT" per_sec:'requests/s' lat_us.p50:'p50 µs' lat_us.p99:'p99 µs' server_cpu_us_per_req:'server CPU µs/req'
