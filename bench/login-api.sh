#!/bin/bash
# Login API throughput: `doorman serve` on loopback, 100,000 live sessions in its DB, then POST {baseUrl}api/login/
# (urlencoded api_key + username) from bench/lib/login-load.ts: CONNS keep-alive connections, one request in
# flight on each, DURATION s per run (after 1 s of warm-up that is not counted). Target (issue): >= 5,000 logins/s
# with p99 < 20 ms on the 2-core machine.
#   bench/login-api.sh
# Cases (each RUNS times, one server for all):
#   relogin  every connection from 127.0.0.1 (a trusted proxy), the client in X-Doorman-Client: 100,000 distinct
#            addresses, the preloaded ones in a fixed random order, so every login replaces a live session
#   new      the same, for addresses that have no session yet (the table grows by one row per login)
#   src      no X-Doorman-Client: connection k comes from 127.0.2.k (127.0.0.0/8), i.e. CONNS clients each
#            logging in again and again as the TCP peer
# Then, unless DECOMPOSE=0, the same relogin load (DECOMPOSE_DURATION s, one run each) against the web app with
# parts taken out (bench/lib/login-app.ts: createApp + startServer, no privilege drop), to see what each part of
# a login costs: SQLite stores or stand-ins, request log on or off, API key verified every time or cached.
# env: RUNS=3 DURATION=10 CONNS=50 SESSIONS=100000 API_PORT=8190 CASES="relogin new src" DECOMPOSE=1
#      DECOMPOSE_DURATION=5
#      PROFILE=1: run the server under node --cpu-prof and print where its time went (results/login-api.cpuprofile)
set -euo pipefail
RUNS=${RUNS:-3}
. "$(dirname "$0")/lib/env.sh"
start_monitor login-api
DURATION=${DURATION:-10}; CONNS=${CONNS:-50}; SESSIONS=${SESSIONS:-100000}; API_PORT=${API_PORT:-8190}
CASES=${CASES:-relogin new src}; PROFILE=${PROFILE:-0}
DECOMPOSE=${DECOMPOSE:-1}; DECOMPOSE_DURATION=${DECOMPOSE_DURATION:-5}
[ "$DURATION" -le 30 ] || { echo "DURATION is capped at 30 s" >&2; exit 2; }
D=$SCRATCH/login-api
OUT=$RESULTS/login-api.jsonl
SERVE=
trap 'stop_pid "$SERVE"' EXIT
need_free_port "$API_PORT"

# --- state: config, 100,000 sessions written through the store in one transaction, an API key ------------------
rm -rf "$D"; mkdir -p "$D/state" "$D/prof"
cat > "$D/doorman.json" <<JSON
{
  "baseUrl": "http://127.0.0.1:$API_PORT/",
  "listen": [{ "host": "127.0.0.1", "port": $API_PORT }],
  "trustedProxies": ["127.0.0.1"],
  "stateDir": "$D/state"
}
JSON
chmod 644 "$D/doorman.json"
echo "preloading $SESSIONS sessions: $("$NODE" "$BENCH/lib/make-sessions.ts" --db "$D/state/doorman.db" --count "$SESSIONS")"
# as root, serve and api-key run as the service user (proxy), who must own the state
if [ "$(id -u)" = 0 ]; then chown -R proxy:proxy "$D/state" "$D/prof"; fi
chmod 700 "$D/state"; chmod 600 "$D/state/doorman.db"
"$ROOT/bin/doorman" api-key create --name bench --config "$D/doorman.json" > "$D/api-key" 2> "$D/api-key.log"
chmod 600 "$D/api-key"

# --- server -------------------------------------------------------------------------------------------------------
if [ "$PROFILE" = 1 ]; then
  "$NODE" --cpu-prof --cpu-prof-dir="$D/prof" "$ROOT/cli/main.ts" serve --config "$D/doorman.json" 2> "$D/serve.log" &
else
  "$ROOT/bin/doorman" serve --config "$D/doorman.json" 2> "$D/serve.log" &   # bin/doorman execs node: $! is the server
fi
SERVE=$!
wait_port "$API_PORT"
wait_file "$D/state/proxy-key" "$D/serve.log"   # made by serve, a moment after it listens
URL=http://127.0.0.1:$API_PORT/api/login/
check=$(curl -s --max-time 5 -H "X-Doorman-Client: $(cat "$D/state/proxy-key") 10.255.255.254" --data-urlencode "api_key=$(cat "$D/api-key")" \
  --data-urlencode username=bench-check "$URL")
echo "  server pid $SERVE ($(ps -o user= -p "$SERVE")); check: $check"
case $check in *'"ip":"10.255.255.254"'*) ;; *) echo "  the login check failed; see $D/serve.log" >&2; exit 1 ;; esac
bad=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H "X-Doorman-Client: $(cat "$D/state/proxy-key") 10.255.255.253" \
  -d api_key=dm.wrong -d username=x "$URL")
[ "$bad" = 401 ] || { echo "  a wrong key got $bad, not 401" >&2; exit 1; }

label_of() {
  case $1 in
    relogin) echo "login API, re-login over $SESSIONS live sessions (X-Doorman-Client from trusted 127.0.0.1, $CONNS conns)" ;;
    new) echo "login API, new addresses, $SESSIONS+ rows (X-Doorman-Client from trusted 127.0.0.1, $CONNS conns)" ;;
    src) echo "login API, $CONNS clients as TCP peers 127.0.2.x (no header)" ;;
  esac
}
# one measured run: measure LABEL CASE DURATION EXTRA_JSON LOADGEN_ARGS...
measure() {
  local label=$1 c=$2 dur=$3 extra=$4 m res; shift 4
  m=$(machine_json)
  res=$(timeout $((dur + 30)) "$NODE" "$BENCH/lib/login-load.ts" --url "$URL" --key-file "$D/api-key" \
    --connections "$CONNS" --duration "$dur" --server-pid "$SERVE" --label "$label" "$@") || {
    echo "  load run failed: $res" >&2; exit 1; }
  record "$OUT" "$m" "$res" "{\"case\":\"$c\",\"sessions_preloaded\":$SESSIONS$extra}" > /dev/null
  tail -1 "$OUT" | python3 -c 'import json,sys; r=json.load(sys.stdin)
print("  %-14s %7.0f logins/s  p50 %6.2f ms  p99 %6.2f ms  max %6.1f ms  server CPU %5.0f us/login  RSS %s kB  statuses %s errors %d" % (
  sys.argv[1], r["per_sec"], r["lat_us"]["p50"]/1e3, r["lat_us"]["p99"]/1e3, r["lat_us"]["max"]/1e3,
  r.get("server_cpu_us_per_req") or 0, r.get("server_rss_kb"), r["statuses"], r["errors"]))' "$c"
}

for c in $CASES; do
  for run in $(seq 1 "$RUNS"); do
    case $c in
      relogin) args=(--mode proxied --proxy-key-file "$D/state/proxy-key" --clients "$SESSIONS" --first 0) ;;
      new) args=(--mode proxied --proxy-key-file "$D/state/proxy-key" --clients "$SESSIONS" --first $((SESSIONS * run))) ;;   # fresh addresses in every run
      src) args=(--mode src --src-base 127.0.2.1) ;;
      *) echo "unknown case $c" >&2; exit 2 ;;
    esac
    measure "$(label_of "$c")" "$c" "$DURATION" ",\"profiled\":$PROFILE" "${args[@]}"
  done
done
echo "  rows in the session DB after the runs: $(runuser -u proxy -- sqlite3 -readonly "$D/state/doorman.db" 'SELECT count(*) FROM sessions' 2>/dev/null || echo '?')"
stop_pid "$SERVE"; SERVE=
echo "  request log lines written by the server: $(grep -c 'POST "/api/login/"' "$D/serve.log" || true)"

if [ "$DECOMPOSE" = 1 ]; then
  echo "parts of a login (the re-login load, ${DECOMPOSE_DURATION}s each, bench/lib/login-app.ts):"
  as_owner=(); [ "$(id -u)" = 0 ] && as_owner=(setpriv --reuid=proxy --regid=proxy --init-groups)
  for v in "db stderr" "db-key-cached stderr" "db none" "memory stderr" "memory none"; do
    set -- $v
    case "$1 $2" in
      "db stderr") label="parts: SQLite stores + request log to a file (as serve)" ;;
      "db-key-cached stderr") label="parts: as serve, but the API key checked once then cached (no api_keys UPDATE per login)" ;;
      "db none") label="parts: SQLite stores, no request log" ;;
      "memory stderr") label="parts: no SQLite (stand-in stores), request log to a file" ;;
      "memory none") label="parts: no SQLite, no request log (Koa + Doorman middleware + node:http)" ;;
    esac
    "${as_owner[@]}" "$NODE" "$BENCH/lib/login-app.ts" --config "$D/doorman.json" --stores "$1" --log "$2" --time-stores \
      2> "$D/app-$1-$2.log" &
    SERVE=$!
    wait_port "$API_PORT"
    measure "$label" "parts-$1-$2" "$DECOMPOSE_DURATION" "" --mode proxied --proxy-key-file "$D/state/proxy-key" --clients "$SESSIONS" --first 0
    stop_pid "$SERVE"; SERVE=
    grep -h 'calls, mean' "$D/app-$1-$2.log" | sed 's/^/      /' || true
  done
fi
if [ "$PROFILE" = 1 ]; then
  prof=$(ls -t "$D"/prof/*.cpuprofile 2>/dev/null | head -1)
  if [ -n "$prof" ]; then
    cp "$prof" "$RESULTS/login-api.cpuprofile"
    "$NODE" "$BENCH/lib/cpuprofile-top.ts" "$RESULTS/login-api.cpuprofile" --root "$ROOT" --top 25 | tee "$RESULTS/login-api.profile.txt"
  else
    echo "  no CPU profile was written (server killed?)" >&2
  fi
fi
echo
tables "$OUT" per_sec:logins/s lat_us.p50:'p50 µs' lat_us.p99:'p99 µs' server_cpu_us_per_req:'server CPU µs/login' server_peak_rss_kb:'server peak RSS kB' driver_cpu_s:'load generator CPU s'
