#!/bin/bash
# NTLM sign-ins through a real Squid while K clients hold an ntlm_auth each (type 1, then silence), how long
# a silent client holds its process, and the pool's memory: bench/lib/ntlm-silent.ts says what is measured.
#   bench/ntlm-silent.sh     env: SILENT="0 8 19" N=20 HOLD_AFTER="1 4 6" KEEP=1
# As root (Squid and serve drop to user proxy; the DC needs network namespaces). Needs npm run build, squid,
# samba, winbind. Takes the integration lock (/tmp/doorman-integration.lock). Figures are printed, never asserted.
set -euo pipefail
if [ -z "${DOORMAN_BENCH_LOCKED:-}" ]; then
  exec env DOORMAN_BENCH_LOCKED=1 flock /tmp/doorman-integration.lock "$0" "$@"
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODE=$ROOT/node_modules/node/bin/node
[ -x "$ROOT/dist/bin/doorman-shim" ] || { echo "no $ROOT/dist/bin/doorman-shim (npm run build)" >&2; exit 2; }
echo "$(date -u '+%F %T') UTC, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(squid -v | head -1)"
"$NODE" "$ROOT/bench/lib/ntlm-silent.ts"
echo "$(date -u '+%F %T') UTC, load average $(cut -d' ' -f1-3 /proc/loadavg)"
