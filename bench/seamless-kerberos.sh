#!/bin/bash
# Kerberos (Negotiate) validations over the helper pipe (no Squid), Doorman beside Squid's negotiate_kerberos_auth,
# replay cache on for both, with N = 1, 2, 4 drivers in parallel (each its own token file, TOKENS fresh tokens).
#   bench/seamless-kerberos.sh            env: TOKENS=2000 PARALLEL="1 2 4" KDC_PORT=(free)
# The anchors kit's driver (lib/helper-bench.js, sequential protocol: "YR <token>", one line at a time, as Squid
# sends a stateful helper) and token maker (lib/mktokens.py, python3-gssapi, one fresh context per token) against
# a throwaway MIT realm (the lab's krb5-setup.sh).
#   anchor : N × `negotiate_kerberos_auth -r -s HTTP/proxy.example.test@EXAMPLE.TEST -k KEYTAB -c RCACHE_i`
#   doorman: N × `dist/bin/doorman-shim <stateDir>/run/negotiate.sock`, all relaying to ONE authd
#            (dist/helpers/authd/main.js, as `doorman serve` would start it: KRB5_KTNAME, KRB5RCACHEDIR, ...)
# Figures are printed, never asserted. Needs npm run build, krb5-kdc, python3-gssapi.
set -euo pipefail
. "$(dirname "$0")/lib/env.sh"
TOKENS=${TOKENS:-2000}; PARALLEL=${PARALLEL:-1 2 4}
KDC_PORT=${KDC_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
SPN=HTTP/proxy.example.test@EXAMPLE.TEST
W=$(mktemp -d /tmp/doorman-bench-krb.XXXXXX); chmod 755 "$W"
KDC=; AUTHD=
cleanup() { stop_pid "$AUTHD"; stop_pid "$KDC"; rm -rf "$W"; }
trap cleanup EXIT
KDC_PORT=$KDC_PORT KADMIN_PORT=0 KPASSWD_PORT=0 "$LAB/krb5/krb5-setup.sh" "$W/realm" >/dev/null 2>&1
KDC=$(cat "$W/realm/krb5kdc.fg.pid")
. "$W/realm/env.sh"            # KRB5_CONFIG, KRB5_KDC_PROFILE, KRB5CCNAME (alice's TGT)
KEYTAB=$W/realm/http.keytab
"$NODE" "$BENCH/lib/seamless-state.ts" "$W/doorman.json" "$W/state" "$KEYTAB" "$KRB5_CONFIG"
S=$W/state/samba
env KRB5_KTNAME="FILE:$S/http.keytab" KRB5_CONFIG="$S/krb5.conf" KRB5RCACHEDIR="$W/state/rcache" \
  GSS_MECH_CONFIG=/dev/null UV_THREADPOOL_SIZE=4 \
  "$NODE" "$ROOT/dist/helpers/authd/main.js" --config "$W/doorman.json" 2> "$W/authd.log" &
AUTHD=$!
wait_socket "$W/state/run/negotiate.sock" "$W/authd.log"
echo "KDC pid $KDC (127.0.0.1:$KDC_PORT), authd pid $AUTHD; $TOKENS tokens per driver"

row() { # row LABEL N FILES... : one line per case from N helper-bench JSON results
  python3 - "$@" <<'PY'
import json, sys
label, n, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rs = [json.loads(open(f).read().strip().splitlines()[-1]) for f in files]
total = sum(r['per_sec'] for r in rs)
p50 = max(r['lat_us']['p50'] for r in rs); p99 = max(r['lat_us']['p99'] for r in rs)
replies = {}
for r in rs:
    for k, v in r['replies'].items(): replies[k] = replies.get(k, 0) + v
print(f"  {label:<34} N={n}  {total:8.0f} validations/s  worst p50 {p50:6.0f} us  worst p99 {p99:6.0f} us  replies {replies}")
PY
}

for N in $PARALLEL; do
  wait_quiet
  for i in $(seq 1 "$N"); do /usr/bin/python3 "$KIT/lib/mktokens.py" "$TOKENS" > "$W/tokens.$i"; done
  for i in $(seq 1 "$N"); do
    rm -rf "$W/rcache.$i"; mkdir -p "$W/rcache.$i"
    node "$KIT/lib/helper-bench.js" --label anchor --concurrency 0 --requests "$W/tokens.$i" --max-seconds 120 -- \
      /usr/lib/squid/negotiate_kerberos_auth -r -s "$SPN" -k "$KEYTAB" -c "$W/rcache.$i" > "$W/anchor.$i.json" &
  done
  wait_jobs=$(jobs -p | grep -v "^$AUTHD$" || true); for j in $wait_jobs; do wait "$j"; done
  row "negotiate_kerberos_auth -c (rcache)" "$N" $(for i in $(seq 1 "$N"); do echo "$W/anchor.$i.json"; done)
  # The same tokens: Doorman's replay cache is its own, so none is a replay there.
  for i in $(seq 1 "$N"); do
    node "$KIT/lib/helper-bench.js" --label doorman --concurrency 0 --requests "$W/tokens.$i" --max-seconds 120 -- \
      "$ROOT/dist/bin/doorman-shim" "$W/state/run/negotiate.sock" > "$W/doorman.$i.json" &
  done
  wait_jobs=$(jobs -p | grep -v "^$AUTHD$" || true); for j in $wait_jobs; do wait "$j"; done
  row "doorman shim -> authd (rcache)" "$N" $(for i in $(seq 1 "$N"); do echo "$W/doorman.$i.json"; done)
  echo "  authd RSS after N=$N: $(awk '/VmRSS/ {print $2" kB"}' "/proc/$AUTHD/status")"
done
