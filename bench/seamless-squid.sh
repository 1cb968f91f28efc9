#!/bin/bash
# Seamless authentication THROUGH a real Squid 5.7 on the configuration Doorman generates, on a proxy joined to
# a real Samba AD DC by `doorman seamless enable` (the test harness's samba-ad.ts and seamless-member.ts), with
# `doorman serve` (authd, its ntlm_auth pool) behind the shims: bench/lib/seamless-squid.ts says what is measured.
#   bench/seamless-squid.sh     env: DURATION=8 WARMUP=2 CONCURRENCY="1 4 8" ROUNDS=2 SPAWN_HELD=4 KEEP=1
# As root (Squid and serve drop to user proxy; the DC needs network namespaces). Needs npm run build (the shim:
# scripts/build-native.sh), squid, samba, winbind, python3-ntlm-auth. Takes the integration lock
# (/tmp/doorman-integration.lock: fixed loopback ports and namespaces shared with the integration tests).
# Figures are printed, never asserted.
set -euo pipefail
if [ -z "${DOORMAN_BENCH_LOCKED:-}" ]; then
  exec env DOORMAN_BENCH_LOCKED=1 flock /tmp/doorman-integration.lock "$0" "$@"
fi
. "$(dirname "$0")/lib/env.sh"
[ -x "$ROOT/dist/bin/doorman-shim" ] || { echo "no $ROOT/dist/bin/doorman-shim (scripts/build-native.sh)" >&2; exit 2; }
W=$(mktemp -d /tmp/doorman-bench-squid.XXXXXX)
trap 'rm -rf "$W"' EXIT
# MD4 for the NTLM client (python3-ntlm-auth through hashlib): OpenSSL 3's legacy provider, for the client alone
# (serve and authd must not inherit it: they run as proxy, who cannot read $W).
legacy_openssl_conf "$W/openssl.cnf"
echo "$(date -u '+%F %T') UTC, $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $(squid -v | head -1)"
wait_quiet || true
python3 "$BENCH/lib/cpu-monitor.py" watch $$ "$W/cpu.log" &
CPU_LOG=$W/cpu.log CLIENT_OPENSSL_CONF=$W/openssl.cnf "$NODE" "$BENCH/lib/seamless-squid.ts"
echo "$(date -u '+%F %T') UTC, load average $(cut -d' ' -f1-3 /proc/loadavg)"
