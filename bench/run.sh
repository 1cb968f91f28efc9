#!/bin/bash
# All of Doorman's benchmarks, anchors and Doorman side by side (~10 minutes on the 2-core machine, more when
# other work keeps the CPUs busy: every run first waits, up to QUIET_WAIT=60 s, for a quiet machine).
#   bench/run.sh             session-helper.sh, login-api.sh, squid-e2e.sh, ldap-helpers.sh; logs to results/*.log, tables to
#                            results/SUMMARY.md (newest run of each case)
#   bench/run.sh --summary   only rewrite results/SUMMARY.md from the results/*.jsonl already there
# env: as each script; RUNS applies to all three when set (default: 3, login-api LOGIN_RUNS=2);
#      DURATION likewise (default: login-api 10 s, squid-e2e E2E_DURATION=8 s)
set -euo pipefail
cd "$(dirname "$0")"
USER_RUNS=${RUNS:-} USER_DURATION=${DURATION:-}
. lib/env.sh   # (the kit's common.sh sets RUNS=3)
R=$RESULTS
if [ "${1:-}" != --summary ]; then
  t0=$SECONDS
  failed=
  for b in session-helper login-api squid-e2e ldap-helpers; do
    echo "=== bench/$b.sh ($(date -u +%T) UTC)"
    runs=${USER_RUNS:-3} duration=${USER_DURATION:-10}
    [ "$b" = login-api ] && runs=${USER_RUNS:-${LOGIN_RUNS:-2}}
    [ "$b" = squid-e2e ] && duration=${USER_DURATION:-${E2E_DURATION:-8}}
    if ! RUNS=$runs DURATION=$duration "./$b.sh" 2>&1 | tee "$R/$b.log"; then echo "bench/$b.sh FAILED"; failed="$failed $b"; fi
  done
  echo "=== all done in $(( (SECONDS - t0) / 60 )) min $(( (SECONDS - t0) % 60 )) s${failed:+; FAILED:$failed}"
fi
section() { # section TITLE JSONL METRIC...
  local title=$1 jsonl=$2; shift 2
  echo; echo "## $title"
  [ -s "$jsonl" ] || { echo "(no results)"; return 0; }
  python3 "$KIT/lib/summarize.py" "$jsonl" "$@" other_cpu_during_pct.mean:'other CPU during run %'
  if [ -s "${jsonl%.jsonl}.quiet.jsonl" ]; then
    echo; echo "Quiet runs only (other processes <= ${QUIET_DURING}% of the CPUs during the run):"; echo
    python3 "$KIT/lib/summarize.py" "${jsonl%.jsonl}.quiet.jsonl" "$@" other_cpu_during_pct.mean:'other CPU during run %'
  fi
}
{
  echo "# Doorman and anchors, side by side (summary written $(date -u +%FT%TZ); $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
  echo
  echo "Newest run of each case, median (min–max). Anchor and Doorman rows come from the same drivers (the anchors kit's,"
  echo "called in place) in the same invocation. \"other CPU during run\": what processes outside the benchmark used, sampled"
  echo "every second (bench/lib/cpu-monitor.py); the kit's own column only looks at the second before each run."
  section "1. Session external-ACL helper over a pipe (100 in flight, 200,000 lookups over 10,000 sessions)" "$R/ext-acl.jsonl" \
    per_sec:lookups/s lat_us.p50:'p50 µs' lat_us.p99:'p99 µs' helper_peak_rss_kb:'peak RSS kB' helper_cpu_us_per_req:'helper CPU µs/req'
  section "2. Login API (100,000 live sessions, 50 keep-alive connections, one login in flight on each)" "$R/login-api.jsonl" \
    per_sec:logins/s lat_us.p50:'p50 µs' lat_us.p99:'p99 µs' server_cpu_us_per_req:'server CPU µs/login' server_peak_rss_kb:'server peak RSS kB'
  section "3. Through Squid 5.7 (50 clients 127.0.1.1–50, keep-alive, one request in flight each)" "$R/squid-e2e.jsonl" \
    per_sec:requests/s lat_us.p50:'p50 µs' lat_us.p99:'p99 µs' helper_requests:'helper requests/run' squid_rss_kb:'Squid RSS kB'
  section "4. Directory helpers over a pipe (slapd, 1,000 users; 5,000 auths, 10% wrong; 20,000 group lookups)" "$R/ldap.jsonl" \
    per_sec:ops/s lat_us.p50:'p50 µs' lat_us.p99:'p99 µs' helper_peak_rss_kb:'peak RSS kB' helper_cpu_us_per_req:'helper CPU µs/req'
} > "$R/SUMMARY.md"
cat "$R/SUMMARY.md"
