#!/bin/bash
# Splash-page sign-ins per second with the directory's credential check (issue 7, Authentication mode):
# `doorman serve` on loopback, the directory a slapd built as bench/ldap-helpers.sh builds it (the lab's
# ldap-setup.sh without TLS + USERS users user0000.. / Passw0rd!), applied with `doorman directory set`
# (transport plain, as the anchors use). Load: bench/lib/splash-load.ts, CONNS workers each on its own
# keep-alive connection, a new client address per sign-in (X-Doorman-Client with the proxy key, as Squid sends it):
# GET {baseUrl}portal/?url=… (CSRF cookie + token), then POST the form with a right password → 303 to the
# original URL. One sign-in = that GET + POST pair. Twice per K: with the directory's password cache on
# (default 60 s: the same user signing in again within a minute costs no bind) and off (--password-cache 0:
# every sign-in is a search and a bind against slapd).
#   bench/splash.sh
# env: RUNS=3 DURATION=10 CONNS="1 8 32" USERS=1000 LDAP_PORT=3390 WEB_PORT=8194
set -euo pipefail
if [ -z "${DOORMAN_SPLASH_BENCH_REAPER:-}" ]; then   # slapd stays a descendant (see bench/ldap-helpers.sh)
  export DOORMAN_SPLASH_BENCH_REAPER=1
  exec python3 -c 'import ctypes, os, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER; kept across execve
os.execv("/bin/bash", ["/bin/bash"] + sys.argv[1:])' "$0" "$@"
fi
RUNS=${RUNS:-3}
. "$(dirname "$0")/lib/env.sh"
start_monitor splash
DURATION=${DURATION:-10}; CONNS=${CONNS:-1 8 32}; USERS=${USERS:-1000}
LDAP_PORT=${LDAP_PORT:-3390}; WEB_PORT=${WEB_PORT:-8194}
SUFFIX=dc=example,dc=test BIND_DN=cn=squid,ou=services,dc=example,dc=test
URI=ldap://127.0.0.1:$LDAP_PORT
D=$SCRATCH/splash
OUT=$RESULTS/splash.jsonl
SLAPD= SERVE=
trap 'stop_pid "$SERVE" || true; stop_pid "$SLAPD" || true' EXIT
need_free_port "$LDAP_PORT"; need_free_port "$WEB_PORT"
rm -rf "$D"; mkdir -p "$D"

echo "=== slapd on $URI with $USERS users"
bench_slapd "$D/slapd"

# one config and state per password-cache setting
setup() { # setup NAME [directory set options...]
  local name=$1; shift
  mkdir -p "$D/$name/state"; chmod 755 "$D" "$D/$name"
  cat > "$D/$name/doorman.json" <<JSON
{
  "baseUrl": "http://127.0.0.1:$WEB_PORT/",
  "listen": [{ "host": "127.0.0.1", "port": $WEB_PORT }],
  "trustedProxies": ["127.0.0.1"],
  "stateDir": "$D/$name/state",
  "squid": { "intercept": { "httpPort": 3129 } },
  "icap": { "host": "127.0.0.1", "port": $((WEB_PORT + 1000)) }
}
JSON
  chmod 644 "$D/$name/doorman.json"
  if [ "$(id -u)" = 0 ]; then chown -R proxy:proxy "$D/$name/state"; fi
  echo "  $name: $(echo bindpw | "$ROOT/bin/doorman" directory set --config "$D/$name/doorman.json" --kind open-directory \
    --host 127.0.0.1 --port "$LDAP_PORT" --transport plain --base-dn "$SUFFIX" --bind-dn "$BIND_DN" --password-stdin "$@" 2>&1 | tr '\n' ' ')"
  "$ROOT/bin/doorman" portal set --mode authentication --config "$D/$name/doorman.json" > /dev/null
}
echo "=== Doorman"
setup cached
setup nocache --password-cache 0

declare -A FIRST=([cached]=0 [nocache]=0)   # the next unused client address per DB
for run in $(seq 1 "$RUNS"); do
  for name in cached nocache; do
    "$ROOT/bin/doorman" serve --config "$D/$name/doorman.json" 2> "$D/$name/serve.log" &   # bin/doorman execs node: $! is the server
    SERVE=$!
    wait_port "$WEB_PORT"
    wait_file "$D/$name/state/proxy-key" "$D/$name/serve.log"   # made by serve, a moment after it listens
    for k in $CONNS; do
      wait_quiet
      m=$(machine_json)
      res=$(timeout $((DURATION + 40)) "$NODE" "$BENCH/lib/splash-load.ts" --base "http://127.0.0.1:$WEB_PORT/" \
        --proxy-key-file "$D/$name/state/proxy-key" --connections "$k" --duration "$DURATION" --users "$USERS" \
        --server-pid "$SERVE" --first-client "${FIRST[$name]}" --label "splash sign-in, password cache $([ $name = cached ] && echo 'on (60 s)' || echo off), K=$k") || {
        echo "  load run failed: $res" >&2; tail -5 "$D/$name/serve.log" >&2; exit 1; }
      record "$OUT" "$m" "$res" "{\"users\":$USERS}" > /dev/null
      FIRST[$name]=$(echo "$res" | python3 -c 'import json,sys; print(json.load(sys.stdin)["next_client"])')
      tail -1 "$OUT" | python3 -c 'import json,sys; r=json.load(sys.stdin)
print("  %-48s %7.0f sign-ins/s  p50 %6.2f ms  p99 %6.2f ms (POST alone p99 %6.2f ms)  server CPU %s us/sign-in  statuses %s errors %d %s" % (
  r["label"], r["per_sec"], (r["lat_us"]["p50"] or 0)/1e3, (r["lat_us"]["p99"] or 0)/1e3, (r["post_lat_us"]["p99"] or 0)/1e3,
  r.get("server_cpu_us_per_req"), r["statuses"], r["errors"], r.get("first_error", "")))'
    done
    stop_pid "$SERVE" || true; SERVE=
  done
done
echo
tables "$OUT" per_sec:sign-ins/s lat_us.p50:'p50 µs' lat_us.p99:'p99 µs' server_cpu_us_per_req:'server CPU µs/sign-in'
