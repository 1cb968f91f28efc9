#!/bin/bash
# NTLM handshakes over the helper pipe (no Squid): Samba's ntlm_auth driven directly, as Squid drives it today
# (`auth_param ntlm program ntlm_auth --helper-protocol=squid-2.5-ntlmssp`), beside Doorman's path (doorman-shim ->
# authd -> its ntlm_auth pool), N = 1 and 4 drivers in parallel (N ntlm_auth processes; N shims on one authd,
# pool max 4). Client: python3-ntlm-auth (bench/lib/ntlm-drive.py, from the lab's ntlm_drive.py).
#   bench/seamless-ntlm.sh      env: COUNT=300 PARALLEL="1 4" KEEP=1 (keep the scratch directory)
# Needs a joined member: the lab's seamless recipes (dc-up.sh + member-up.sh, own network namespace NS, scratch
# SCRATCH_SEAMLESS) are started here and stopped at the end. Needs npm run build, samba, winbind,
# python3-ntlm-auth. Figures are printed, never asserted.
set -euo pipefail
. "$(dirname "$0")/lib/env.sh"
COUNT=${COUNT:-300}; PARALLEL=${PARALLEL:-1 4}
RECIPES=${RECIPES:-$LAB/seamless}
export NS=${NS:-doormanbench} SCRATCH=${SCRATCH_SEAMLESS:-/tmp/doorman-bench-ntlm-lab}
M=$SCRATCH/samba/member
W=$(mktemp -d /tmp/doorman-bench-ntlm.XXXXXX); chmod 755 "$W"
AUTHD=
# authd runs under nsrun (ip netns exec may fork): stopped by the PID of the node process itself, and its
# ntlm_auth pool with it.
authd_pid() { pgrep -f "authd/main.js --config $W/doorman.json" | head -1; }
cleanup() {
  local pid; pid=$(authd_pid || true)
  if [ -n "$pid" ]; then for child in $(pgrep -P "$pid"); do stop_pid "$child"; done; stop_pid "$pid"; fi
  stop_pid "$AUTHD"; "$RECIPES/dc-down.sh" >/dev/null 2>&1 || true
  if [ -n "${KEEP:-}" ]; then echo "kept $W (authd.log, per-driver results)"; else rm -rf "$W"; fi
}
trap cleanup EXIT
"$RECIPES/dc-up.sh" > "$W/lab.log" 2>&1 && "$RECIPES/member-up.sh" >> "$W/lab.log" 2>&1 || { cat "$W/lab.log"; exit 1; }
in_member() { NSFILES=$M "$LAB/samba/nsrun" "$@"; }   # the member's /run/samba (winbindd socket), hosts, resolv.conf

# Doorman "joined" to the lab's domain: its smb.conf is the member's.
"$NODE" "$BENCH/lib/seamless-state.ts" "$W/doorman.json" "$W/state" "$M/http.keytab" "$SCRATCH/samba/krb5.conf" >/dev/null
cp "$M/etc/smb.conf" "$W/state/samba/smb.conf"
in_member env GSS_MECH_CONFIG=/dev/null KRB5_KTNAME="FILE:$W/state/samba/http.keytab" KRB5RCACHEDIR="$W/state/rcache" "$NODE" "$ROOT/dist/helpers/authd/main.js" --config "$W/doorman.json" 2> "$W/authd.log" &
AUTHD=$!
wait_socket "$W/state/run/ntlm.sock" "$W/authd.log"

legacy_openssl_conf "$W/openssl.cnf"
export OPENSSL_CONF=$W/openssl.cnf NTLM_DOMAIN=EXAMPLE NTLM_USER=alice NTLM_PASS='Passw0rd!'
row() { python3 - "$@" <<'PY'
import json, sys
label, n, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rs = [json.loads(open(f).read().strip().splitlines()[-1]) for f in files]
print(f"  {label:<40} N={n}  {sum(r['per_sec'] for r in rs):7.0f} handshakes/s  worst p50 {max(r['p50_us'] for r in rs):7.0f} us"
      f"  worst p99 {max(r['p99_us'] for r in rs):7.0f} us  ok {sum(r['ok'] for r in rs)}/{sum(r['handshakes'] for r in rs)}"
      + (f"  other {[r['other'] for r in rs if r['other']]}" if any(r['other'] for r in rs) else ''))
PY
}
echo "$COUNT handshakes per driver"
for N in $PARALLEL; do
  wait_quiet
  pids=()
  for i in $(seq 1 "$N"); do
    in_member /usr/bin/python3 "$BENCH/lib/ntlm-drive.py" "$COUNT" -- /usr/bin/ntlm_auth --helper-protocol=squid-2.5-ntlmssp \
      --configfile="$M/etc/smb.conf" > "$W/direct.$i.json" 2> "$W/direct.$i.err" & pids+=($!)
  done
  wait "${pids[@]}"
  row "ntlm_auth squid-2.5-ntlmssp, direct" "$N" $(for i in $(seq 1 "$N"); do echo "$W/direct.$i.json"; done)
  pids=()
  for i in $(seq 1 "$N"); do
    /usr/bin/python3 "$BENCH/lib/ntlm-drive.py" "$COUNT" -- "$ROOT/dist/bin/doorman-shim" "$W/state/run/ntlm.sock" \
      > "$W/doorman.$i.json" 2> "$W/doorman.$i.err" & pids+=($!)
  done
  wait "${pids[@]}"
  row "doorman shim -> authd -> ntlm_auth pool" "$N" $(for i in $(seq 1 "$N"); do echo "$W/doorman.$i.json"; done)
  pid=$(authd_pid)
  echo "  authd RSS after N=$N: $(awk '/VmRSS/ {print $2" kB"}' "/proc/$pid/status"); ntlm_auth pool: $(pgrep -P "$pid" -c) processes, $(pgrep -P "$pid" | xargs -r -I{} awk '/VmRSS/ {s+=$2} END {print s}' /proc/{}/status | awk '{s+=$1} END {print s+0}') kB RSS"
done
