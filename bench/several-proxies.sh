#!/bin/bash
# Several proxies on one PostgreSQL beside one proxy on SQLite (issue 15), side by side in one run, on loopback:
# a throwaway PostgreSQL 15 (the test harness's startPostgres: Debian's postgresql package, initdb in a
# temporary directory, its own port, fsync off) and a SQLite session DB, each preloaded with SESSIONS live
# sessions on the same keys (PostgreSQL by COPY with one change number, SQLite through SessionStore.start() in
# one transaction). bench/lib/several-proxies.ts says what each figure is:
#   1. logins/s and p99 at SESSIONS live sessions, straight into store.sessions.start() (CALLERS callers)
#   2. A→B visibility p50/p99 (box B a process of its own; box A logging in at VIS_RATE/s)
#   3. authd's RSS with SESSIONS sessions (a real doorman-authd on each store)
#   4. a full reload of every session (Replica.start(); authd's cold start to its first OK)
#   5. session lookups/s through the real shim, with no logins and while another box logs in at LOGIN_RATE/s
# Targets (issue 15, PostgreSQL): >= 20,000 logins/s with p99 <= 20 ms at 1M sessions; A->B p99 <= 50 ms; a full
# reload of 1M <= 3 s; authd <= 300 MB with 1M. Figures are printed, never asserted.
#   bench/several-proxies.sh       about 4 minutes with the defaults on the 2-core machine
# As root (the cluster runs as user postgres; authd gives up root for proxy). Needs postgresql-15, npm ci and
# the anchors kit (its helper-bench.js drives the shim). Records: results/several-proxies.jsonl.
# env: SESSIONS=1000000 RUNS=2 (figures 1 and 5 alternate engines each run) DURATION=10 (s, figures 1 and 2)
#      WARMUP=1 CALLERS=100 VIS_RATE=1000 LOGIN_RATE=1000 LOOKUPS=500000 INFLIGHT=100
#      PROFILE=1: CPU profiles of box A's Replica.start() and of the first logins on each engine
#                 (results/several-proxies.*.cpuprofile, summaries beside them)
#      MEMORY_PARTS=0: leave out where a PostgreSQL session's memory goes (bench/lib/session-memory.ts)
set -euo pipefail
RUNS=${RUNS:-2}
. "$(dirname "$0")/lib/env.sh"
[ "$(id -u)" = 0 ] || { echo "run as root: the PostgreSQL cluster runs as user postgres, authd as proxy" >&2; exit 2; }
[ -x /usr/lib/postgresql/15/bin/postgres ] || { echo "no PostgreSQL 15 (apt-get install postgresql-15)" >&2; exit 2; }
# authd and the shim as this checkout has them (dist/ is tsc's; a fresh clone has none)
(cd "$ROOT" && npm run build >/dev/null)
start_monitor several-proxies
OUT=$RESULTS/several-proxies.jsonl
echo "$(date -u '+%F %T') UTC, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
MACHINE=$(machine_json)
export RUNS
OUT=$OUT SCRATCH=$SCRATCH/several-proxies KIT=$KIT MACHINE=$MACHINE RUN_ID=$RUN_ID "$NODE" "$BENCH/lib/several-proxies.ts"
sleep 2   # the monitor's last samples
python3 "$BENCH/lib/cpu-monitor.py" annotate "$MONITOR_SINCE" "$MONITOR_LOG" "$OUT"
echo
"$NODE" "$BENCH/lib/several-proxies-report.ts" "$OUT" --run "$RUN_ID" --quiet-max "$QUIET_DURING"
