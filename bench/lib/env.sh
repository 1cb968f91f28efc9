# Sourced by bench/*.sh: paths, and the anchors kit's helpers (machine facts, record, wait_quiet, stop_pid...).
# The anchors' scripts are called in place (read-only kit) with RESULTS and SCRATCH pointing here, so their rows
# and ours land in the same results/*.jsonl and the same tables.
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(dirname "$BENCH")
# The anchors kit sits beside the checkout (../shared/anchors-bench); KIT= names another place.
KIT=${KIT:-$(cd "$ROOT/.." && pwd)/shared/anchors-bench}
# The project's pinned Node 24 (runs .ts natively). A bare `node` (Node 20 on this machine) is only used by
# the anchors' own drivers, exactly as they were measured.
NODE=$ROOT/node_modules/node/bin/node
export RESULTS=${RESULTS:-$BENCH/results}
export SCRATCH=${SCRATCH:-/tmp/doorman-bench}
# The kit waits up to QUIET_WAIT s for a quiet machine before each run (default 300 there); shorter here so a
# busy machine cannot stretch bench/run.sh far past its ~10 minutes. Each record keeps the CPU use it saw.
export QUIET_WAIT=${QUIET_WAIT:-60}
[ -x "$NODE" ] || { echo "no pinned Node at $NODE (npm ci first)" >&2; exit 2; }
[ -r "$KIT/lib/common.sh" ] || { echo "no anchors kit at $KIT (set KIT=)" >&2; exit 2; }
# shellcheck source=/dev/null
. "$KIT/lib/common.sh"

# Other processes' CPU use, sampled every second while this script runs (bench/lib/cpu-monitor.py): the kit
# only looks in the second before each run.
start_monitor() { # start_monitor NAME -> $RESULTS/NAME.cpu.log
  MONITOR_LOG=$RESULTS/$1.cpu.log MONITOR_SINCE=$(date +%s)
  : > "$MONITOR_LOG"
  python3 "$BENCH/lib/cpu-monitor.py" watch $$ "$MONITOR_LOG" &
}
monitor_report() { # monitor_report JSONL...
  python3 "$BENCH/lib/cpu-monitor.py" report "$MONITOR_SINCE" "$MONITOR_LOG" "$@" || true
}
# Runs during which other processes used more than this (mean % of all CPUs) are left out of the "quiet" tables.
QUIET_DURING=${QUIET_DURING:-5}
# tables JSONL METRIC... : note other processes' CPU use in this script's records, then print the table of the
# newest run of each case and the same for the quiet runs only (also left in JSONL's *.quiet.jsonl)
tables() {
  local jsonl=$1; shift
  sleep 2   # the monitor's last samples
  python3 "$BENCH/lib/cpu-monitor.py" annotate "$MONITOR_SINCE" "$MONITOR_LOG" "$jsonl"
  echo "All runs (newest of each case; $jsonl):"
  python3 "$KIT/lib/summarize.py" "$jsonl" "$@" other_cpu_during_pct.mean:'other CPU during run %'
  python3 "$BENCH/lib/cpu-monitor.py" quiet "$MONITOR_SINCE" "$QUIET_DURING" "$jsonl" > "${jsonl%.jsonl}.quiet.jsonl"
  echo
  echo "Quiet runs only (other processes <= $QUIET_DURING% of the CPUs during the run), this invocation:"
  if [ -s "${jsonl%.jsonl}.quiet.jsonl" ]; then
    python3 "$KIT/lib/summarize.py" "${jsonl%.jsonl}.quiet.jsonl" "$@" other_cpu_during_pct.mean:'other CPU during run %'
  else
    echo "  (none)"
  fi
}

# wait_socket SOCKET LOG: wait up to 10 s for authd to listen on SOCKET; if it does not, show LOG and exit 1.
wait_socket() {
  for _ in $(seq 200); do [ -S "$1" ] && return 0; sleep 0.05; done
  echo "authd did not listen on $1:" >&2; cat "$2" >&2; exit 1
}
# wait_file PATH LOG: until `doorman serve` has made PATH (its proxy key: made once it has given up root and
# opened the DB, a moment after its port answers), at most 10 s; else show LOG and stop.
wait_file() {
  for _ in $(seq 200); do [ -s "$1" ] && return 0; sleep 0.05; done
  echo "$1 did not appear:" >&2; cat "$2" >&2; exit 1
}
# legacy_openssl_conf FILE: an OpenSSL configuration with the legacy provider on (MD4, which python3-ntlm-auth
# needs through hashlib), for a client's OPENSSL_CONF alone.
legacy_openssl_conf() {
  printf 'openssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\n[provider_sect]\ndefault = default_sect\nlegacy = legacy_sect\n[default_sect]\nactivate = 1\n[legacy_sect]\nactivate = 1\n' > "$1"
}

# bench_slapd DIR: a slapd as the anchors' bench-ldap.sh builds it (the lab's ldap-setup.sh without TLS, on
# $LDAP_PORT = $URI, under $SUFFIX), with $USERS users user0000.. (password Passw0rd!) and the even ones in
# cn=proxy-users; sets SLAPD to its PID.
bench_slapd() {
  local dir=$1 hash
  LDAP_TLS=0 LDAP_PORT=$LDAP_PORT "$LAB/ldap/ldap-setup.sh" "$dir" >/dev/null
  SLAPD=$(cat "$dir/slapd.fg.pid")
  hash=$(slappasswd -s 'Passw0rd!')
  awk -v n="$USERS" -v h="$hash" -v s="$SUFFIX" 'BEGIN{for(i=0;i<n;i++){u=sprintf("user%04d",i)
    printf "dn: uid=%s,ou=people,%s\nobjectClass: inetOrgPerson\nuid: %s\ncn: %s\nsn: Bench\nuserPassword: %s\n\n", u, s, u, u, h}
    printf "dn: cn=proxy-users,ou=groups,%s\nchangetype: modify\nadd: member\n", s
    for(i=0;i<n;i+=2) printf "member: uid=user%04d,ou=people,%s\n", i, s}' > "$dir.users.ldif"
  ldapmodify -a -x -H "$URI" -D "cn=admin,$SUFFIX" -w adminpw -f "$dir.users.ldif" >/dev/null
}

# Squid runs the compiled helpers (dist/, built by npm ci / npm run build): measure those, built from this tree.
(cd "$ROOT" && PATH="$ROOT/node_modules/.bin:$PATH" tsc -p tsconfig.build.json)
