#!/bin/bash
# Denied requests of identified clients across the events in the life of Doorman's processes (issue 14 §1),
# through a real Squid at ttl=0: no event, kill -9 of the web app, its restart, a planned authd restart, kill -9
# of authd, a Squid started the moment Doorman reports ready. bench/lib/authd-events.ts says what is measured.
#   bench/authd-events.sh     env: CLIENTS=20 BEFORE_MS=1000 AFTER_MS=3000
# As root (Squid and Doorman drop to user proxy). Needs npm run build and squid. Takes the integration lock
# (/tmp/doorman-integration.lock). Figures are printed, never asserted.
set -euo pipefail
if [ -z "${DOORMAN_BENCH_LOCKED:-}" ]; then
  exec env DOORMAN_BENCH_LOCKED=1 flock /tmp/doorman-integration.lock "$0" "$@"
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODE=$ROOT/node_modules/node/bin/node
[ -x "$NODE" ] || { echo "no pinned Node at $NODE (npm ci first)" >&2; exit 2; }
[ -x "$ROOT/dist/bin/doorman-shim" ] || { echo "no $ROOT/dist/bin/doorman-shim (npm run build)" >&2; exit 2; }
echo "$(date -u '+%F %T') UTC, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(squid -v | head -1)"
"$NODE" "$ROOT/bench/lib/authd-events.ts"
