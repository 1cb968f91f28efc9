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
# Doorman's DB is built beforehand (bench/lib/make-sessions.ts: the store's own start(), one transaction) with the
# kit's keys 10.a.b.c -> user%05d. Then the side-by-side table: lookups/s, p99, peak RSS, helper CPU per request.
# env: RUNS=3 SESSIONS=10000 LOOKUPS=200000 INFLIGHT=100 ANCHORS=1 (0: only Doorman's rows, the anchors' newest
#      rows stay in the table)
set -euo pipefail
RUNS=${RUNS:-3}
. "$(dirname "$0")/lib/env.sh"
start_monitor session-helper
export RUNS SESSIONS=${SESSIONS:-10000} LOOKUPS=${LOOKUPS:-200000} INFLIGHT=${INFLIGHT:-100}
ANCHORS=${ANCHORS:-1}
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
echo "=== doorman-session-acl, lines '<ch> <ip>'"
"$KIT/bench-ext-acl.sh" "doorman-session-acl" -- "${HELPER[@]}"

# warm: same driver, same lookups file the kit just wrote (without suffix), the keys once as --setup first
KD=$SCRATCH/ext-acl
[ -s "$KD/lookups.txt" ] && [ -s "$KD/keys.txt" ] || { echo "no $KD/lookups.txt (the kit's layout changed?)" >&2; exit 1; }
LABEL="doorman-session-acl, warm (the $SESSIONS keys once as --setup first)"
echo "=== $LABEL"
for run in $(seq 1 "$RUNS"); do
  m=$(machine_json)
  record "$RESULTS/ext-acl.jsonl" "$m" "$(node "$LIB/helper-bench.js" --label "$LABEL" --concurrency "$INFLIGHT" \
    --setup "$KD/keys.txt" --requests "$KD/lookups.txt" -- "${HELPER[@]}")" \
    "{\"sessions\":$SESSIONS,\"inflight\":$INFLIGHT}" > /dev/null
  tail -1 "$RESULTS/ext-acl.jsonl" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("  %-44s %9.0f lookups/s  p99 %6.0f us  rss %6s kB  replies %s" % (r["label"][:44], r["per_sec"], r["lat_us"]["p99"], r.get("helper_peak_rss_kb"), r["replies"]))'
done

echo "=== doorman-session-acl, lines '<ch> <ip> -' (as Squid 5 sends them)"
SUFFIX=" -" "$KIT/bench-ext-acl.sh" "doorman-session-acl, lines '<ch> <ip> -' (Squid 5)" -- "${HELPER[@]}"

echo
echo "=== side by side"
tables "$RESULTS/ext-acl.jsonl" per_sec:lookups/s lat_us.p50:'p50 µs' lat_us.p99:'p99 µs' \
  helper_peak_rss_kb:'peak RSS kB' helper_cpu_us_per_req:'helper CPU µs/req'
