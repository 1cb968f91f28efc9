#!/bin/bash
# Directory helpers over a pipe (no Squid): Doorman's Basic helper (dist/helpers/basic-auth.js) and group helper
# (dist/helpers/group-acl.js) against the anchors basic_ldap_auth -P and ext_ldap_group_acl -P, same driver (the
# kit's lib/helper-bench.js), same request files, same slapd set-up, same machine, one table.
#   bench/ldap-helpers.sh
# 1. anchors: the kit's bench-ldap.sh, called in place (its own slapd from the lab's ldap-setup.sh, 1,000 users
#    user0000..0999 / Passw0rd!, the even ones in cn=proxy-users; it writes auth.txt: 5,000 "user password"
#    lines, 90% right, and group.txt: 20,000 "user proxy-users" lines; sequential protocol, as the anchors are).
# 2. a slapd built the same way (lab's ldap-setup.sh without TLS + the kit's user LDIF, copied below), with
#    cn=Monitor added to count the LDAP operations; the directory applied in a Doorman session DB with
#    `doorman directory set` (transport plain, as the anchors use), and then, RUNS times, interleaved:
#      - the anchors again on this slapd ("[same slapd]": the like-for-like control; also gives their slapd
#        CPU and LDAP operations per request),
#      - Doorman, concurrency protocol, 50 in flight (Squid: concurrency=50; caches as configured, 60 s),
#      - Doorman, sequential protocol (helper flag --sequential, driver --concurrency 0),
#      - Doorman, 50 in flight, with the password and group caches off (--password-cache 0 --group-cache 0),
#      - Doorman, 50 in flight, cold: Node's start-up (~0.2 s) inside the timed phase, as the kit's project
#        mode measures it. The other Doorman rows are warm: one request for `alice` (a lab user outside the
#        bench set, so no bench user's cache entry) goes first as the driver's --setup phase, as a helper that
#        Squid started earlier; helper CPU per request still includes the start-up.
#    The kit's request files are used as they are (regenerated with the kit's awk only with ANCHORS=0).
#    The password cache never makes a wrong or changed password pass: every check searches the user first
#    and a cached success is good only for the same freshness token (entryCSN...). Checked here twice: the
#    reply counts must be exactly the file's (4,497 OK / 503 ERR for auth, 9,969 OK / 10,031 ERR for groups),
#    and at the end a changed password is tried against a warm cache (old password must get ERR).
# Every record also gets slapd CPU µs/request and LDAP searches and binds per request (cn=Monitor, minus the
# counting's own; set-up request and connection binds included), for the runs on this script's slapd.
# env: RUNS=3 ANCHORS=1 (0: skip step 1; the anchors' newest kit rows stay in the table) LDAP_PORT=3389
#      USERS=1000 AUTHS=5000 GROUP_LOOKUPS=20000 INFLIGHT=50 COLD=1 NOCACHE=1 (0: leave those rows out)
set -euo pipefail
# Become a child subreaper first (re-exec once through python3): slapd, which ldap-setup.sh leaves running in
# the background, then stays a descendant of this script, so bench/lib/cpu-monitor.py counts its CPU as the
# benchmark's own and not as "other processes".
if [ -z "${DOORMAN_LDAP_BENCH_REAPER:-}" ]; then
  export DOORMAN_LDAP_BENCH_REAPER=1
  exec python3 -c 'import ctypes, os, sys
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER; kept across execve
os.execv("/bin/bash", ["/bin/bash"] + sys.argv[1:])' "$0" "$@"
fi
RUNS=${RUNS:-3}
export SCRATCH=${SCRATCH:-/tmp/doorman-bench-ldap}
. "$(dirname "$0")/lib/env.sh"
export RUNS RUN_ID LDAP_PORT=${LDAP_PORT:-3389} USERS=${USERS:-1000} AUTHS=${AUTHS:-5000}
export GROUP_LOOKUPS=${GROUP_LOOKUPS:-20000}
ANCHORS=${ANCHORS:-1} INFLIGHT=${INFLIGHT:-50} COLD=${COLD:-1} NOCACHE=${NOCACHE:-1}
OUT=$RESULTS/ldap.jsonl
SUFFIX=dc=example,dc=test BIND_DN=cn=squid,ou=services,dc=example,dc=test
URI=ldap://127.0.0.1:$LDAP_PORT
KD=$SCRATCH/ldap              # the kit's scratch (its request files)
D=$SCRATCH/ldap-doorman       # ours
need_free_port "$LDAP_PORT"
rm -rf "$D"; mkdir -p "$D/stderr"
# other processes' CPU use, every second (as lib/env.sh's start_monitor, but the log in our scratch directory;
# copied to results/ldap-helpers.cpu.log at the end)
MONITOR_LOG=$D/cpu.log MONITOR_SINCE=$(date +%s)
: > "$MONITOR_LOG"
python3 "$BENCH/lib/cpu-monitor.py" watch $$ "$MONITOR_LOG" &
t0=$SECONDS

# ---- 1. anchors through the kit ---------------------------------------------------------------------------
if [ "$ANCHORS" = 1 ]; then
  echo "=== anchors: the kit's bench-ldap.sh (RUNS=$RUNS, its own slapd on $URI)"
  "$KIT/bench-ldap.sh"
  cp "$KD/auth.txt" "$KD/group.txt" "$D/"
else
  # the kit's own generator (bench-ldap.sh), same seeds: byte-identical files
  awk -v n="$USERS" -v m="$AUTHS" 'BEGIN{srand(7); for(i=0;i<m;i++){u=int(rand()*n); printf "user%04d %s\n", u, (rand()<0.9 ? "Passw0rd!" : "wrong-pw")}}' > "$D/auth.txt"
  awk -v n="$USERS" -v m="$GROUP_LOOKUPS" 'BEGIN{srand(8); for(i=0;i<m;i++) printf "user%04d proxy-users\n", int(rand()*n)}' > "$D/group.txt"
  if [ -s "$KD/auth.txt" ]; then cmp -s "$KD/auth.txt" "$D/auth.txt" && cmp -s "$KD/group.txt" "$D/group.txt" \
    && echo "(request files identical to the kit's last ones)" || echo "ANOMALY: request files differ from the kit's ($KD)"; fi
fi
# what the replies must be: OK for every right password / every even user, ERR for the rest
EXP_AUTH_OK=$(grep -c ' Passw0rd!$' "$D/auth.txt" || true)
EXP_GROUP_OK=$(awk '{n=substr($1,5)+0; if (n%2==0) c++} END{print c+0}' "$D/group.txt")
echo "auth.txt: $(wc -l < "$D/auth.txt") lines, $EXP_AUTH_OK with the right password; group.txt: $(wc -l < "$D/group.txt") lines, $EXP_GROUP_OK members"

# ---- 2. our slapd: the lab's set-up + the kit's users (copied from bench-ldap.sh) + cn=Monitor --------------
SLAPD=
trap 'stop_pid "$SLAPD"' EXIT
need_free_port "$LDAP_PORT"
bench_slapd "$D/slapd"
# cn=Monitor (read-only counters slapd keeps anyway), readable by the directory admin only
ldapmodify -x -H "$URI" -D cn=admin,cn=config -w adminpw >/dev/null <<LDIF
dn: cn=module{0},cn=config
changetype: modify
add: olcModuleLoad
olcModuleLoad: back_monitor

dn: olcDatabase=monitor,cn=config
changetype: add
objectClass: olcDatabaseConfig
olcDatabase: monitor
olcAccess: to * by dn.exact="cn=admin,$SUFFIX" read by * none
LDIF
echo "=== slapd pid $SLAPD on $URI with $USERS bench users (+ cn=Monitor)"
ldap_ops() { # "searches binds" completed so far; each call adds one bind and one search of its own
  ldapsearch -x -LLL -H "$URI" -D "cn=admin,$SUFFIX" -w adminpw -b cn=Operations,cn=Monitor -s one \
    '(|(cn=Search)(cn=Bind))' monitorOpCompleted |
    awk '/^dn: cn=Search/{k="s"} /^dn: cn=Bind/{k="b"} /^monitorOpCompleted/{v[k]=$2} END{print v["s"]+0, v["b"]+0}'
}
slapd_ticks() { awk '{print $14 + $15}' "/proc/$SLAPD/stat"; }

# Doorman: a config per cache setting, the directory applied in each session DB
apply() { # apply NAME [doorman directory set options...]
  local name=$1; shift
  mkdir -p "$D/$name/state"
  echo "{\"stateDir\": \"$D/$name/state\"}" > "$D/$name/doorman.json"
  echo "doorman directory set ($name): $(echo bindpw | "$ROOT/bin/doorman" directory set --config "$D/$name/doorman.json" \
    --kind open-directory --host 127.0.0.1 --port "$LDAP_PORT" --transport plain --base-dn "$SUFFIX" \
    --bind-dn "$BIND_DN" --password-stdin "$@" 2>&1 | tr '\n' ' ')"
}
apply cached
[ "$NOCACHE" = 1 ] && apply nocache --password-cache 0 --group-cache 0
echo "alice Passw0rd!" > "$D/setup-auth.txt"
echo "alice proxy-users" > "$D/setup-group.txt"

ANOMALIES=$D/anomalies.txt; : > "$ANOMALIES"
# drive LABEL KIND(auth|group) CONCURRENCY WARM(1|0) -- CMD...   (stderr of CMD to $D/stderr/KIND-c.log)
drive() {
  local label=$1 kind=$2 conc=$3 warm=$4; shift 5
  local errlog=$D/stderr/$kind-$(echo "$label" | tr -c 'a-zA-Z0-9\n' '-' | cut -c1-60).log
  local setup=(); [ "$warm" = 1 ] && setup=(--setup "$D/setup-$kind.txt")
  local m res rc=0 o0 o1 s0 s1
  m=$(machine_json)
  o0=$(ldap_ops); s0=$(slapd_ticks)
  res=$(node "$LIB/helper-bench.js" --label "$label" --concurrency "$conc" "${setup[@]}" --requests "$D/$kind.txt" \
    --max-seconds 300 -- sh -c 'f=$1; shift; exec "$@" 2>>"$f"' sh "$errlog" "$@") || rc=$?
  s1=$(slapd_ticks); o1=$(ldap_ops)
  [ -n "$res" ] || { echo "ANOMALY: no result from the driver for '$label' (exit $rc)" | tee -a "$ANOMALIES"; return 0; }
  local extra
  extra=$(python3 -c 'import json, os, sys
r = json.loads(sys.argv[1]); o0, o1 = sys.argv[2].split(), sys.argv[3].split()
n = (r.get("requests") or 0) + (r.get("setup") or {}).get("requests", 0)
hz = os.sysconf("SC_CLK_TCK")
x = {"users": int(sys.argv[6]), "requests_file": sys.argv[7], "warm": sys.argv[8] == "1", "ldap_uri_port": int(sys.argv[9])}
if n:
    x["slapd_cpu_us_per_req"] = round((int(sys.argv[5]) - int(sys.argv[4])) * 1e6 / hz / n, 1)
    x["ldap_searches_per_req"] = round((int(o1[0]) - int(o0[0]) - 1) / n, 3)
    x["ldap_binds_per_req"] = round((int(o1[1]) - int(o0[1]) - 1) / n, 3)
print(json.dumps(x))' "$res" "$o0" "$o1" "$s0" "$s1" "$USERS" "$kind" "$warm" "$LDAP_PORT")
  record "$OUT" "$m" "$res" "$extra" >/dev/null
  tail -1 "$OUT" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("  %-58s %8.0f /s  p50 %6.0f us  p99 %7.0f us  rss %6s kB  cpu %5s us/req  slapd %4s us/req  search %s bind %s /req  %s" % (r["label"][:58], r["per_sec"], r["lat_us"]["p50"], r["lat_us"]["p99"], r.get("helper_peak_rss_kb"), r.get("helper_cpu_us_per_req"), r.get("slapd_cpu_us_per_req"), r.get("ldap_searches_per_req"), r.get("ldap_binds_per_req"), r["replies"]))'
  [ "$rc" = 0 ] || echo "ANOMALY: driver exit $rc for '$label'" | tee -a "$ANOMALIES"
}

A_AUTH="basic_ldap_auth -P search+bind ($AUTHS, 10% wrong)"
A_GROUP="ext_ldap_group_acl -P ($GROUP_LOOKUPS, ~50% member)"
BASIC=(/usr/lib/squid/basic_ldap_auth -v 3 -P -b "ou=people,$SUFFIX" -f 'uid=%s' -D "$BIND_DN" -w bindpw -H "$URI")
GROUP=(/usr/lib/squid/ext_ldap_group_acl -v 3 -P -b "ou=groups,$SUFFIX" -f '(&(objectClass=groupOfNames)(cn=%g)(member=%u))'
  -B "ou=people,$SUFFIX" -F 'uid=%s' -D "$BIND_DN" -w bindpw -H "$URI")
ours() { echo "$NODE" "$ROOT/dist/helpers/$1.js" --config "$D/$2/doorman.json"; }
# the Doorman cases, in order: LABEL|CONCURRENCY|WARM|CONFIG|EXTRA HELPER ARG
doorman_cases() { # doorman_cases NAME  (NAME: basic-auth or group-acl)
  echo "doorman $1, concurrency $INFLIGHT|$INFLIGHT|1|cached|"
  echo "doorman $1, sequential (--sequential)|0|1|cached|--sequential"
  [ "$NOCACHE" = 1 ] && echo "doorman $1, concurrency $INFLIGHT, caches off|$INFLIGHT|1|nocache|"
  [ "$COLD" = 1 ] && echo "doorman $1, concurrency $INFLIGHT, cold (Node start-up timed)|$INFLIGHT|0|cached|"
  return 0
}
for run in $(seq 1 "$RUNS"); do
  echo "=== run $run/$RUNS (anchors and Doorman on slapd $SLAPD)"
  for kind in auth group; do
    if [ "$kind" = auth ]; then drive "$A_AUTH [same slapd]" auth 0 0 -- "${BASIC[@]}"; name=basic-auth
    else drive "$A_GROUP [same slapd]" group 0 0 -- "${GROUP[@]}"; name=group-acl; fi
    while IFS='|' read -r label conc warm cfg arg; do
      # shellcheck disable=SC2046
      drive "$label" "$kind" "$conc" "$warm" -- $(ours "$name" "$cfg") $arg
    done < <(doorman_cases "$name")
  done
done

# ---- the cache rule, checked: a changed password must not pass from the cache --------------------------------
echo "=== password change against a warm cache (doorman basic-auth, channel-IDs, cache 60 s)"
NEWHASH=$(slappasswd -s 'Changed-pw1')
{
  echo "0 user0000 Passw0rd!"; sleep 0.5      # OK, now cached
  echo "1 user0000 Passw0rd!"; sleep 0.5      # OK (from the cache)
  printf 'dn: uid=user0000,ou=people,%s\nchangetype: modify\nreplace: userPassword\nuserPassword: %s\n' "$SUFFIX" "$NEWHASH" |
    ldapmodify -x -H "$URI" -D "cn=admin,$SUFFIX" -w adminpw >/dev/null
  echo "2 user0000 Passw0rd!"; sleep 0.5      # ERR: the old password, after the change
  echo "3 user0000 Changed-pw1"; sleep 0.5    # OK
  echo "4 user0000 wrong-pw"; sleep 0.5       # ERR
} | $(ours basic-auth cached) > "$D/cache-check.out" 2>>"$D/stderr/cache-check.log"
GOT=$(cut -d' ' -f1-2 "$D/cache-check.out" | tr '\n' ' ')
if [ "$GOT" = "0 OK 1 OK 2 ERR 3 OK 4 ERR " ]; then echo "  passed: $GOT"
else echo "ANOMALY: password change check got '$GOT', want '0 OK 1 OK 2 ERR 3 OK 4 ERR'" | tee -a "$ANOMALIES"; fi

# ---- checks over every record of this run: reply counts exactly as the files say; helpers' stderr ------------
python3 - "$OUT" "$RUN_ID" "$EXP_AUTH_OK" "$(wc -l < "$D/auth.txt")" "$EXP_GROUP_OK" "$(wc -l < "$D/group.txt")" >> "$ANOMALIES" <<'PY'
import json, sys
path, run, aok, an, gok, gn = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:])
for line in open(path):
    r = json.loads(line)
    if r.get("run_id") != run:
        continue
    auth = "basic" in r["label"]
    want = {"OK": aok, "ERR": an - aok} if auth else {"OK": gok, "ERR": gn - gok}
    if r.get("replies") != want or r.get("stopped"):
        print(f"ANOMALY: {r['label']}: replies {r.get('replies')}, want {want}" + (f", stopped: {r['stopped']}" if r.get("stopped") else ""))
PY
for f in "$D"/stderr/*.log; do
  [ -s "$f" ] || continue
  # routine: the helper's one start-up line per process
  odd=$(grep -v -e 'directory settings [0-9]* in force' "$f" | sort | uniq -c | sort -rn | head -5 || true)
  [ -z "$odd" ] || { echo "ANOMALY: stderr of $(basename "$f"):"; echo "$odd"; } >> "$ANOMALIES"
done
echo
if [ -s "$ANOMALIES" ]; then echo "=== anomalies"; cat "$ANOMALIES"; else echo "=== no anomalies (reply counts exact in every run, no BH, helpers' stderr only start-up lines)"; fi
stop_pid "$SLAPD"; SLAPD=

echo
echo "=== side by side ($(( (SECONDS - t0) / 60 )) min $(( (SECONDS - t0) % 60 )) s)"
cp "$MONITOR_LOG" "$RESULTS/ldap-helpers.cpu.log"
tables "$OUT" per_sec:'auths or lookups/s' lat_us.p50:'p50 µs' lat_us.p99:'p99 µs' helper_peak_rss_kb:'peak RSS kB' \
  helper_cpu_us_per_req:'helper CPU µs/req'
echo
echo "Directory side (runs on this script's slapd; set-up request and connection binds included):"
python3 "$KIT/lib/summarize.py" "$OUT" slapd_cpu_us_per_req:'slapd CPU µs/req' ldap_searches_per_req:'LDAP searches/req' \
  ldap_binds_per_req:'LDAP binds/req' driver_cpu_s:'driver CPU s'
