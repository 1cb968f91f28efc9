#!/bin/bash
# End to end through Squid 5.7 (squid -N, one process) to the kit's tiny origin: the anchors kit's
# bench-squid-e2e.sh, called in place, for its anchors (a) allow all, (b) ext_session_acl ttl=60, (c) the same
# with ttl=0 negative_ttl=0, and with Doorman's dist/helpers/session-acl.js as the helper in its (b) and (c)
# (concurrency=100 children-max=1 %SRC, run by Squid as user proxy). Load: the kit's http-proxy-bench.js,
# CONNS keep-alive connections from CONNS source addresses 127.0.1.1.., one request in flight each.
#   bench/squid-e2e.sh
# Then (d): Doorman's own default, which the kit's script cannot express (its (b) is ttl=60 with %SRC and one
# child): the squid.conf that `doorman squid-conf --standalone` writes from a config with default squid settings,
# i.e. external_acl_type ttl=5 negative_ttl=0 concurrency=100 children-max=2 %SRC %>eui, its access log in the
# doorman format and its X-Doorman-User reply header, unchanged (a wrapper adds a hosts_file, see own()). It runs
# alternately with (a') the kit's (a) configuration and (d0) (d) without identification. Same origin, same load
# generator, same record format, same results/squid-e2e.jsonl.
# Sessions for every client address are written into Doorman's DB beforehand, as user proxy, through the store
# (bench/lib/make-sessions.ts): the kit's E2E_PREPARE hook for (b)/(c), directly for (d).
# Targets (issue): (d) and Doorman's (b) >= 95% of (a) (and of (a') for (d), per round); Doorman's (c) above
# ext_session_acl's (c). Printed at the end, for all runs and for the quiet runs only.
# env: RUNS=3 DURATION=10 CONNS=50 SQUID_PORT=3128 ORIGIN_PORT=8081
#      PARTS="anchors kit own" (which of: the anchors; Doorman in the kit's (b)/(c); (d)); rows not run keep
#      their newest results in the table
set -euo pipefail
RUNS=${RUNS:-3}
. "$(dirname "$0")/lib/env.sh"
start_monitor squid-e2e
export RUNS DURATION=${DURATION:-10} CONNS=${CONNS:-50} SQUID_PORT=${SQUID_PORT:-3128} ORIGIN_PORT=${ORIGIN_PORT:-8081}
PARTS=${PARTS:-anchors kit own}
part() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
[ "$(id -u)" = 0 ] || { echo "run as root (Squid drops to user proxy, which must own Doorman's DB)" >&2; exit 2; }
D=$SCRATCH/doorman-e2e
OUT=$RESULTS/squid-e2e.jsonl
AS_PROXY=(setpriv --reuid=proxy --regid=proxy --init-groups)

# Doorman's state: DB dir owned by proxy, mode 0700; the config readable by proxy (Squid starts the helper as it)
fresh_state() { # fresh_state DIR -> DIR/state (empty DB), DIR/doorman.json
  rm -rf "$1"; mkdir -p "$1/state"
  cat > "$1/doorman.json" <<JSON
{
  "baseUrl": "http://127.0.0.1:8180/",
  "stateDir": "$1/state"
}
JSON
  chmod 755 "$1"; chmod 644 "$1/doorman.json"
  chown -R proxy:proxy "$1/state"; chmod 700 "$1/state"
  "${AS_PROXY[@]}" "$NODE" "$BENCH/lib/make-sessions.ts" --db "$1/state/doorman.db" --count 0 > /dev/null
}
mkdir -p "$SCRATCH"; chmod 755 "$SCRATCH"

if part anchors; then
  echo "=== anchors (bench-squid-e2e.sh): (a) allow all, (b) ext_session_acl ttl=60, (c) ttl=0"
  "$KIT/bench-squid-e2e.sh"
fi

if part kit; then
  echo "=== doorman-session-acl in the kit's (b) ttl=60 and (c) ttl=0"
  fresh_state "$D/kit"
  # The hook runs as root in the kit's script: write the sessions as proxy, so no root-owned -wal/-shm appears.
  # (c) starts with the sessions (b) wrote: Doorman's DB outlives a Squid restart, so its before-login check is 200.
  export E2E_PREPARE="${AS_PROXY[*]} $NODE $BENCH/lib/make-sessions.ts --db $D/kit/state/doorman.db --ips \"\$ABENCH_CLIENT_IPS\" >/dev/null"
  "$KIT/bench-squid-e2e.sh" "doorman-session-acl" -- "$NODE" "$ROOT/dist/helpers/session-acl.js" --db "$D/kit/state/doorman.db" --flush-seconds 30
  unset E2E_PREPARE
fi

# ---- (d) Doorman's own generated configuration ---------------------------------------------------------------
# Runs alternate between (a'), (d0) and (d), one Squid start each, so that load that comes and goes on a shared
# machine hits all three alike (the kit's (a) ran minutes earlier):
#   (a')  the kit's (a) configuration (written here the same way): http_access allow all, no identification
#   (d0)  the generated configuration with "http_access allow doorman_identified" turned into "allow all"
#         (Doorman's log format, reply header and doorman_site ACL still in place; the helper starts, is never asked)
#   (d)   the generated configuration as it is
# so (d)/(a') is the whole cost of Doorman's default, (d)/(d0) that of the identification alone.
own() {
LABEL="(d) doorman squid-conf --standalone default: ttl=5 negative_ttl=0 children-max=2 %SRC %>eui"
LABEL0="(d0) as (d), but http_access allow all instead of doorman_identified (no lookups)"
LABELA="(a') allow all, no identification, run alternately with (d0) and (d)"
echo "=== $LABEL, alternating with (a') and (d0)"
ORIGIN= SQUID= AUTHD=
trap 'stop_pid "$SQUID"; stop_pid "$ORIGIN"; stop_pid "$AUTHD"' EXIT
need_free_port "$SQUID_PORT"; need_free_port "$ORIGIN_PORT"
fresh_state "$D/own"
SQ=$D/own/squid
# The proxy key doorman serve makes on its first start (the include carries it): made here the same way.
(cd "$ROOT" && "$NODE" -e "import('./lib/security/proxy-key.ts').then((m) => m.ensureProxyKey('$D/own/state/proxy-key'))")
"$ROOT/bin/doorman" squid-conf --standalone "$SQ" --port "127.0.0.1:$SQUID_PORT" --loopback-dns --config "$D/own/doorman.json" > /dev/null
grep '^external_acl_type' "$SQ/doorman.conf" | sed 's/^/  /'
sed 's/^http_access allow doorman_identified$/http_access allow all/' "$SQ/doorman.conf" > "$SQ/doorman-d0.conf"
grep -q '^http_access allow all$' "$SQ/doorman-d0.conf" || { echo "  no 'http_access allow doorman_identified' line to turn off" >&2; exit 1; }
sed "s#^include $SQ/doorman.conf\$#include $SQ/doorman-d0.conf#" "$SQ/squid.conf" > "$SQ/squid-d0.conf"
chown -R proxy:proxy "$SQ"
# Since issue 8 Squid's helper children are shims relaying to one authd (helpers/authd/main.ts), which doorman
# serve starts as proxy: started here the same way (flags and user as helpers/authd/supervisor.ts gives them).
chown -R proxy:proxy "$D/own/state"
"${AS_PROXY[@]}" "$NODE" --max-semi-space-size=2 "$ROOT/dist/helpers/authd/main.js" --config "$D/own/doorman.json" \
  2> "$D/own/authd.log" & AUTHD=$!
wait_socket "$D/own/state/run/session.sock" "$D/own/authd.log"
# The generated files are used unchanged, through a wrapper that adds one name: Squid rewrites cache manager URLs
# to visible_hostname (doorman-proxy), and the generated "acl doorman_site dst 127.0.0.1", checked first, has to
# resolve it: with --loopback-dns and no DNS server that waits until the DNS timeout, so helper_sent could not
# read the external_acl page. The origin is addressed by IP, so the load itself needs no name.
echo "127.0.0.1 doorman-proxy" > "$D/own/hosts"
printf 'include %s\nhosts_file %s\n' "$SQ/squid.conf" "$D/own/hosts" > "$D/own/bench-d.conf"
printf 'include %s\nhosts_file %s\n' "$SQ/squid-d0.conf" "$D/own/hosts" > "$D/own/bench-d0.conf"
# (a'): the kit's conf() for (a), with its own run directory
mkdir -p "$D/own/a/logs" "$D/own/a/cache"; chown -R proxy:proxy "$D/own/a"
cat > "$D/own/bench-a.conf" <<CONF
http_port 127.0.0.1:$SQUID_PORT
visible_hostname proxy.example.test
pid_filename $D/own/a/squid.pid
cache_log $D/own/a/logs/cache.log
access_log stdio:$D/own/a/logs/access.log squid
coredump_dir $D/own/a/cache
cache deny all
pinger_enable off
dns_nameservers 127.0.0.1
shutdown_lifetime 0 seconds
http_access allow all
CONF
for v in a d d0; do
  squid -k parse -f "$D/own/bench-$v.conf" 2> "$D/own/parse.log" || { cat "$D/own/parse.log"; exit 1; }
done

node "$LIB/origin.js" "$ORIGIN_PORT" > "$D/own/origin.log" 2>&1 & ORIGIN=$!
wait_port "$ORIGIN_PORT"
TARGET=http://127.0.0.1:$ORIGIN_PORT/
CLIENT_IPS=$(for i in $(seq 1 "$CONNS"); do n=$((256 + i)); echo -n "127.0.$((n / 256)).$((n % 256)) "; done)
first=${CLIENT_IPS%% *}; last=$(echo $CLIENT_IPS | awk '{print $NF}')
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 -x "127.0.0.1:$SQUID_PORT" "$@"; }
user_of() { curl -s -o /dev/null -D - --max-time 5 -x "127.0.0.1:$SQUID_PORT" --interface "$1" "$TARGET" | tr -d '\r' | awk -F': ' 'tolower($1)=="x-doorman-user"{print $2}'; }
# (d) allows the cache manager to identified clients only (deny all after the include): 127.0.0.1 gets a session
# too, so helper_sent can read the external_acl page, as in the kit's script.
helper_sent() { curl -s --max-time 5 "http://127.0.0.1:$SQUID_PORT/squid-internal-mgr/external_acl" | awk '/requests sent:/{n+=$3} END{print n+0}'; }
start_squid() { # start_squid d|d0
  squid -N -f "$D/own/bench-$1.conf" > "$D/own/squid-$1.out" 2>&1 & SQUID=$!
  wait_port "$SQUID_PORT"
}

# the login check, once: refused before the sessions are written, identified after
start_squid d
check="before-login=$(code --interface "$first" "$TARGET")"
"${AS_PROXY[@]}" "$NODE" "$BENCH/lib/make-sessions.ts" --db "$D/own/state/doorman.db" --ips "$CLIENT_IPS 127.0.0.1" > /dev/null
check="$check prepare=done get(first)=$(code --interface "$first" "$TARGET") get(last)=$(code --interface "$last" "$TARGET") X-Doorman-User(first)=$(user_of "$first")"
echo "  squid pid $SQUID; checks: $check"
case "$check" in *"before-login=403"*"get(first)=200 get(last)=200 X-Doorman-User(first)=user00000") ;;
  *) echo "  the checks failed; see $SQ/logs/cache.log" >&2; exit 1 ;; esac
[ "$(helper_sent)" -gt 0 ] || { echo "  cannot read the cache manager's external_acl page" >&2; exit 1; }
stop_pid "$SQUID"; SQUID=

for run in $(seq 1 "$RUNS"); do
  for v in a d0 d; do
    start_squid "$v"
    case $v in a) label=$LABELA ;; d0) label=$LABEL0 ;; d) label=$LABEL ;; esac
    vcheck="get(last)=$(code --interface "$last" "$TARGET") X-Doorman-User(last)=$(user_of "$last")"
    case $v in
      a) want="get(last)=200 X-Doorman-User(last)=" ;;   # no such header without Doorman's include
      d0) want="get(last)=200 X-Doorman-User(last)=-" ;;  # nobody identified: %un is "-"
      d) want="get(last)=200 X-Doorman-User(last)=user00049" ;;
    esac
    case "$vcheck" in "$want") ;;
      *) echo "  $v: check failed: $vcheck; see $SQ/logs/cache.log" >&2; exit 1 ;; esac
    m=$(machine_json)
    h0=$(helper_sent)
    res=$(timeout $((DURATION + 15)) node "$LIB/http-proxy-bench.js" --proxy "127.0.0.1:$SQUID_PORT" --url "$TARGET" \
      --connections "$CONNS" --src-base "$first" --duration "$DURATION")
    record "$OUT" "$m" "$res" "{\"label\":\"$label\",\"helper_requests\":$(( $(helper_sent) - h0 )),\"loadgen\":\"node c=$CONNS ${DURATION}s\",\"checks\":\"$check $vcheck\",\"squid_rss_kb\":$(ps -o rss= -p "$SQUID" | tr -d ' ')}" > /dev/null
    tail -1 "$OUT" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("    run %s %-3s %8.0f req/s  p50 %6.0f us  p99 %6.0f us  statuses %s errors %s  helper requests %d" % (sys.argv[1], sys.argv[2], r["per_sec"], r["lat_us"]["p50"], r["lat_us"]["p99"], r["statuses"], r["errors"], r["helper_requests"]))' "$run" "$v"
    shims=$(pgrep -u proxy -f "doorman-shim --concurrent $D/own/state/run/session.sock" || true)
    [ "$v" = d ] && echo "      shims: $(echo "$shims" | grep -c . || true), RSS kB: $(echo "$shims" | xargs -r ps -o rss= -p | tr '\n' ' '); authd RSS kB: $(ps -o rss= -p "$AUTHD" | tr -d ' ')"
    stop_pid "$SQUID"; SQUID=
  done
done
stop_pid "$ORIGIN"; ORIGIN=
}
if part own; then own; fi

echo
echo "=== side by side"
tables "$OUT" per_sec:'requests/s' lat_us.p50:'p50 µs' lat_us.p99:'p99 µs' \
  helper_requests:'helper requests per run' squid_rss_kb:'Squid RSS kB after run'
echo
for f in "$OUT" "${OUT%.jsonl}.quiet.jsonl"; do
python3 - "$f" <<'PY'
# the issue's targets, from the medians of the newest run of each case
import json, statistics, sys
path = sys.argv[1]
recs = [json.loads(l) for l in open(path) if l.strip()]
print('Targets, %s:' % ('quiet runs only' if path.endswith('.quiet.jsonl') else 'all runs'))
by = {}
for r in recs: by.setdefault(r.get('label', ''), []).append(r)
def med(label, exact=False):  # the first case whose label is (or starts with) label
    for l, rs in by.items():
        if l == label or (not exact and l.startswith(label)):
            newest = max(r['run_id'] for r in rs)
            v = [r['per_sec'] for r in rs if r['run_id'] == newest]
            return statistics.median(v), l, len(v)
    return None, label, 0
a = med('(a) allow all, no identification', True)
c = med('(c) ext_session_acl, concurrency=100 ttl=0 negative_ttl=0', True)
for prefix, ref, ref_name, goal in [('(b) doorman-session-acl, ttl=60', a, '(a)', 0.95),
                                    ('(d) doorman squid-conf', a, '(a)', 0.95),
                                    ('(d) doorman squid-conf', med("(a') allow all"), "(a'), run alternately", 0.95),
                                    ('(d) doorman squid-conf', med('(d0) as (d)'), '(d0), run alternately', 0.95),
                                    ('(c) doorman-session-acl, ttl=0', c, "ext_session_acl's (c)", 1.0)]:
    v, label, n = med(prefix)
    if v is None or ref[0] is None:
        print(f'  {prefix}: not enough runs'); continue
    print(f'  {label} ({n} runs): {v:,.0f} req/s = {100 * v / ref[0]:.1f}% of {ref_name} ({ref[0]:,.0f}, {ref[2]} runs);'
          f' target >= {100 * goal:.0f}%: {"met" if v >= goal * ref[0] else "NOT met"}')
# (d) against the (a') and (d0) run just before it (the same alternation round, if both are in this file)
rounds = [r for r in recs if r.get('label', '').startswith(("(a') allow all", '(d0) as (d)', '(d) doorman squid-conf'))]
if rounds:
    newest = max(r['run_id'] for r in rounds)
    seq = [r for r in rounds if r['run_id'] == newest]
    for ref_prefix, name in (("(a') allow all", "(a')"), ('(d0) as (d)', '(d0)')):
        ratios = []
        for i, r in enumerate(seq):
            if r['label'].startswith('(d) doorman'):
                prev = [p for p in seq[:i] if p['label'].startswith(ref_prefix)]
                if prev and seq.index(prev[-1]) >= i - 2:
                    ratios.append(100 * r['per_sec'] / prev[-1]['per_sec'])
        if ratios:
            print(f'  (d) / {name} in the same round: ' + ', '.join(f'{x:.1f}%' for x in ratios)
                  + f' (median {statistics.median(ratios):.1f}%)')
PY
done
