#!/bin/bash
# Session external-ACL helper over a pipe (no Squid): the anchors kit's bench-ext-acl.sh, called in place, for
# the anchors (ext_session_acl -a -b with -t / -T, ext_sql_session_acl with and without --persist) and for
# Doorman's dist/helpers/session-acl.js through the same driver (lib/helper-bench.js: concurrency protocol, INFLIGHT
# requests in flight, LOOKUPS lookups spread uniformly at random over SESSIONS keys, fixed seed).
#   bench/session-helper.sh
# Doorman rows (label doorman-session-acl...):
#   plain     lines "<ch> <ip>", as the kit sends them to the anchors
#   suffix    lines "<ch> <ip> -" (SUFFIX=" -"), what Squid 5 sends for %SRC with no acl arguments
#   warm      (not through the kit's script, same driver and files) the SESSIONS keys are looked up once as the
#             driver's --setup phase first, as ext_session_acl gets its SESSIONS LOGIN lines: the timed
#             lookups then start with a running, warmed-up helper (in the other two, Node's start-up
#             (~0.15 s) falls inside the timed phase)
#   shim      (SHIM=1, the default) what Squid runs since issue 8: dist/bin/doorman-shim --concurrent on authd's
#             session socket, authd (dist/helpers/authd/main.js) started beforehand as serve starts it, plain
#             and warm as above. The driver sees the shim only (its RSS and CPU); authd's CPU time per lookup
#             (from /proc, over the same run) and its RSS after the runs are printed beside each row.
# Doorman's DB is built beforehand (bench/lib/make-sessions.ts: the store's own start(), one transaction) with the
# kit's keys 10.a.b.c -> user%05d. Then the side-by-side table: lookups/s, p99, peak RSS, helper CPU per request.
# env: RUNS=3 SESSIONS=10000 LOOKUPS=200000 INFLIGHT=100 ANCHORS=1 (0: only Doorman's rows, the anchors' newest
#      rows stay in the table) SHIM=1 (0: no shim rows) DIRECT=1 (0: no rows of the direct helper)
set -euo pipefail
RUNS=${RUNS:-3}
. "$(dirname "$0")/lib/env.sh"
start_monitor session-helper
export RUNS SESSIONS=${SESSIONS:-10000} LOOKUPS=${LOOKUPS:-200000} INFLIGHT=${INFLIGHT:-100}
ANCHORS=${ANCHORS:-1} SHIM=${SHIM:-1} DIRECT=${DIRECT:-1}
D=$SCRATCH/session-helper
rm -rf "$D"; mkdir -p "$D/state"
echo "{ \"stateDir\": \"$D/state\" }" > "$D/doorman.json"
echo "Doorman session DB: $("$NODE" "$BENCH/lib/make-sessions.ts" --db "$D/state/doorman.db" --count "$SESSIONS")"
# exactly what doorman squid-conf writes: the compiled helper, its DB and flush interval on the command line
HELPER=("$NODE" "$ROOT/dist/helpers/session-acl.js" --db "$D/state/doorman.db" --flush-seconds 30)

if [ "$ANCHORS" = 1 ]; then
  echo "=== anchors (bench-ext-acl.sh)"
  "$KIT/bench-ext-acl.sh"
fi
# warm: same driver, same lookups file as the kit's (without suffix), the keys once as --setup first
KD=$SCRATCH/ext-acl
warm() { # warm LABEL -- CMD...
  local label=$1; shift 2
  [ -s "$KD/lookups.txt" ] && [ -s "$KD/keys.txt" ] || { echo "no $KD/lookups.txt (the kit's layout changed?)" >&2; exit 1; }
  echo "=== $label"
  for run in $(seq 1 "$RUNS"); do
    m=$(machine_json)
    record "$RESULTS/ext-acl.jsonl" "$m" "$(node "$LIB/helper-bench.js" --label "$label" --concurrency "$INFLIGHT" \
      --setup "$KD/keys.txt" --requests "$KD/lookups.txt" -- "$@")" \
      "{\"sessions\":$SESSIONS,\"inflight\":$INFLIGHT}" > /dev/null
    tail -1 "$RESULTS/ext-acl.jsonl" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("  %-44s %9.0f lookups/s  p99 %6.0f us  rss %6s kB  replies %s" % (r["label"][:44], r["per_sec"], r["lat_us"]["p99"], r.get("helper_peak_rss_kb"), r["replies"]))'
  done
}

if [ "$DIRECT" = 1 ]; then
  echo "=== doorman-session-acl, lines '<ch> <ip>'"
  "$KIT/bench-ext-acl.sh" "doorman-session-acl" -- "${HELPER[@]}"
  warm "doorman-session-acl, warm (the $SESSIONS keys once as --setup first)" -- "${HELPER[@]}"
  echo "=== doorman-session-acl, lines '<ch> <ip> -' (as Squid 5 sends them)"
  SUFFIX=" -" "$KIT/bench-ext-acl.sh" "doorman-session-acl, lines '<ch> <ip> -' (Squid 5)" -- "${HELPER[@]}"
fi

if [ "$SHIM" = 1 ]; then
  "$ROOT/scripts/build-native.sh"
  # authd as serve starts it (helpers/authd/supervisor.ts), on this DB; stopped by its PID at exit
  UV_THREADPOOL_SIZE=4 "$NODE" --max-semi-space-size=2 "$ROOT/dist/helpers/authd/main.js" --config "$D/doorman.json" \
    2> "$D/authd.log" &
  AUTHD=$!
  trap 'stop_pid "$AUTHD" || true' EXIT
  wait_socket "$D/state/run/session.sock" "$D/authd.log"
  SHIM_CMD=("$ROOT/dist/bin/doorman-shim" --concurrent "$D/state/run/session.sock")
  ticks() { awk '{print $14 + $15}' "/proc/$AUTHD/stat"; }
  # authd's share, which the driver cannot see: CPU per lookup over the runs just made, RSS now
  authd_cpu() { # authd_cpu TICKS_BEFORE LOOKUPS_MADE
    local t; t=$(ticks)
    echo "  authd: CPU $(( ( t - $1 ) * 1000000 / $(getconf CLK_TCK) / $2 )) µs/lookup over these runs (warm-ups included)," \
      "RSS $(awk '/^VmRSS/{print $2}' "/proc/$AUTHD/status") kB"
  }
  echo "=== doorman-session via shim + authd, lines '<ch> <ip>'"
  before=$(ticks)
  "$KIT/bench-ext-acl.sh" "doorman-session via shim+authd" -- "${SHIM_CMD[@]}"
  authd_cpu "$before" $((LOOKUPS * RUNS))
  before=$(ticks)
  warm "doorman-session via shim+authd, warm (keys once as --setup)" -- "${SHIM_CMD[@]}"
  authd_cpu "$before" $(((LOOKUPS + SESSIONS) * RUNS))
  echo "=== doorman-session via shim + authd, lines '<ch> <ip> -' (as Squid 5 sends them)"
  before=$(ticks)
  SUFFIX=" -" "$KIT/bench-ext-acl.sh" "doorman-session via shim+authd, lines '<ch> <ip> -' (Squid 5)" -- "${SHIM_CMD[@]}"
  authd_cpu "$before" $((LOOKUPS * RUNS))
fi

echo
echo "=== side by side"
tables "$RESULTS/ext-acl.jsonl" per_sec:lookups/s lat_us.p50:'p50 µs' lat_us.p99:'p99 µs' \
  helper_peak_rss_kb:'peak RSS kB' helper_cpu_us_per_req:'helper CPU µs/req'
