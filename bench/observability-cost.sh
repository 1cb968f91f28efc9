#!/bin/bash
# What the metrics and the audit trail cost together (issue 16: less than 5 % on the lookup path and the login
# API), side by side in one run: this checkout ("head", metrics listener on, the audit trail on as it always is:
# a login's event in the login's own transaction, a page of events a group commit) against the commit before
# both ("base": the parent of the commit that added lib/store/audit-store.ts, which came before lib/metrics/;
# or BASE=<rev>), built in a temporary `git worktree` beside it (node_modules shared). Each tree runs its own
# `doorman serve` (which starts its authd) on a state dir of its own with SESSIONS sessions (that tree's
# bench/lib/make-sessions.ts, so each DB has its own schema) and an API key. Head is scraped every SCRAPE_EVERY s
# (15: Prometheus' default) for the whole run, and once at the end. Then, RUNS times, base and head in turn
# (PAIRED=1: at the same time):
#   lookups  the anchors' driver (helper-bench.js, the kit's key scheme: LOOKUPS lookups spread at random over the
#            SESSIONS keys, INFLIGHT in flight, the keys once as --setup first) through dist/bin/doorman-shim
#            --concurrent on that tree's authd: what Squid runs
#   logins   bench/lib/login-load.ts: CONNS keep-alive connections logging in the preloaded addresses in
#            X-Doorman-Client from the trusted 127.0.0.1, DURATION s each (head records an event for each);
#            USERS=same: each login renews its address's session (the same user), USERS=next: each takes it
#            from another user (a replacement: head reads the session replaced and records api.replaced)
# and prints the means side by side with the cost in %: throughput, p99, and the CPU each lookup cost authd and
# each login cost serve (from /proc; on a busy machine the CPU figures are the ones to read). Last, the lookup
# counting on its own, in one process where other load falls on both sides alike (bench/lib/lookup-count-cost.ts),
# and the audit row and the counts of a login the same way (bench/lib/login-audit-cost.ts).
#   bench/observability-cost.sh
# env: RUNS=3 SESSIONS=10000 LOOKUPS=200000 INFLIGHT=100 DURATION=5 CONNS=50 BASE=<rev> SCRAPE_EVERY=15 USERS=same
#      PORT_BASE=8192 PORT_HEAD=8193 METRICS_PORT=9479 (head's metrics listener)
#      METRICS=0: head without its metrics listener (with BASE=HEAD: the same tree and config on both sides, what
#      the bench itself makes of two equal serves)
#      PAIRED=1: base's and head's lookups run at the same time, then their logins (see paired)
#      PROFILE=1: serve and authd of both trees run under node --cpu-prof (a .cpuprofile each in
#      $SCRATCH/observability-cost/{base,head}/prof at the end; bench/lib/cpuprofile-top.ts reads them)
set -euo pipefail
RUNS=${RUNS:-3}
. "$(dirname "$0")/lib/env.sh"
start_monitor observability-cost
SESSIONS=${SESSIONS:-10000}; LOOKUPS=${LOOKUPS:-200000}; INFLIGHT=${INFLIGHT:-100}
DURATION=${DURATION:-5}; CONNS=${CONNS:-50}; USERS=${USERS:-same}; SCRAPE_EVERY=${SCRAPE_EVERY:-15}; METRICS=${METRICS:-1}
PAIRED=${PAIRED:-0}
PORT_BASE=${PORT_BASE:-8192}; PORT_HEAD=${PORT_HEAD:-8193}; METRICS_PORT=${METRICS_PORT:-9479}
[ "$DURATION" -le 30 ] || { echo "DURATION is capped at 30 s" >&2; exit 2; }
case $PAIRED in 0|1) ;; *) echo "PAIRED is 0 or 1, not $PAIRED" >&2; exit 2 ;; esac
D=$SCRATCH/observability-cost
OUT=$RESULTS/observability-cost.jsonl
for p in "$PORT_BASE" "$PORT_HEAD" "$METRICS_PORT"; do need_free_port "$p"; done

# the first of the two to land: the audit trail (lib/store/audit-store.ts), then the metrics (lib/metrics/registry.ts)
AUDIT=$(git -C "$ROOT" log --diff-filter=A --format=%H -- lib/store/audit-store.ts | tail -1)
METRICS_ADDED=$(git -C "$ROOT" log --diff-filter=A --format=%H -- lib/metrics/registry.ts | tail -1)
FIRST=$AUDIT; git -C "$ROOT" merge-base --is-ancestor "$AUDIT" "$METRICS_ADDED" || FIRST=$METRICS_ADDED
BASE_WHAT="BASE=${BASE:-}"; [ -n "${BASE:-}" ] || BASE_WHAT="the commit before the audit trail and the metrics"
BASE=${BASE:-$FIRST^}
BASE_SHA=$(git -C "$ROOT" rev-parse --short "$BASE")
HEAD_SHA=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- . ':!bench' || echo '+changes')
declare -A SERVE=() TREE=()
SCRAPER=
cleanup() {
  stop_pid "$SCRAPER" || true
  for t in base head; do
    [ -n "${TREE[$t]:-}" ] && "${TREE[$t]}/bin/doorman" authd stop --config "$D/$t/doorman.json" >/dev/null 2>&1 || true
    stop_pid "${SERVE[$t]:-}" || true
  done
  git -C "$ROOT" worktree remove --force "$D/base-tree" >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 1' INT TERM
rm -rf "$D"; mkdir -p "$D"
git -C "$ROOT" worktree prune
echo "base: $BASE_SHA ($BASE_WHAT), built in a temporary worktree; head: $HEAD_SHA"
git -C "$ROOT" worktree add --detach "$D/base-tree" "$BASE_SHA" >/dev/null 2>&1
ln -s "$ROOT/node_modules" "$D/base-tree/node_modules"
(cd "$D/base-tree" && npm run build >/dev/null)
(cd "$ROOT" && npm run build >/dev/null)
TREE[base]=$D/base-tree TREE[head]=$ROOT

# the kit's keys and lookups (bench-ext-acl.sh's scheme, fixed seed): 10.a.b.c -> user%05d
awk -v n="$SESSIONS" 'BEGIN{for(i=0;i<n;i++) printf "10.%d.%d.%d\n", int(i/65536)%256, int(i/256)%256, i%256}' > "$D/keys.txt"
awk -v n="$SESSIONS" -v m="$LOOKUPS" 'BEGIN{srand(42); for(i=0;i<m;i++){k=int(rand()*n); printf "10.%d.%d.%d\n", int(k/65536)%256, int(k/256)%256, k%256}}' > "$D/lookups.txt"

start_tree() { # start_tree base|head PORT
  local t=$1 port=$2 dir=$D/$1 metrics=''
  mkdir -p "$dir/state"
  [ "$t" = head ] && [ "$METRICS" = 1 ] && metrics=", \"metrics\": { \"listen\": { \"host\": \"127.0.0.1\", \"port\": $METRICS_PORT } }"
  cat > "$dir/doorman.json" <<JSON
{
  "baseUrl": "http://127.0.0.1:$port/",
  "listen": [{ "host": "127.0.0.1", "port": $port }],
  "trustedProxies": ["127.0.0.1"],
  "stateDir": "$dir/state"$metrics
}
JSON
  chmod 644 "$dir/doorman.json"
  "$NODE" "${TREE[$t]}/bench/lib/make-sessions.ts" --db "$dir/state/doorman.db" --count "$SESSIONS" > /dev/null
  if [ "$(id -u)" = 0 ]; then chown -R proxy:proxy "$dir/state"; fi
  chmod 700 "$dir/state"; chmod 600 "$dir/state/doorman.db"
  "${TREE[$t]}/bin/doorman" api-key create --name bench --config "$dir/doorman.json" > "$dir/api-key" 2> "$dir/api-key.log"
  local prof=()
  # serve and authd write their profiles as the user they run as (proxy, when started as root)
  [ -n "${PROFILE:-}" ] && mkdir -p -m 1777 "$dir/prof" && prof=(env "NODE_OPTIONS=--cpu-prof --cpu-prof-dir=$dir/prof")
  "${prof[@]}" "${TREE[$t]}/bin/doorman" serve --config "$dir/doorman.json" 2> "$dir/serve.log" &
  SERVE[$t]=$!
  wait_port "$port"
  wait_file "$dir/state/proxy-key" "$dir/serve.log"
  wait_socket "$dir/state/run/session.sock" "$dir/serve.log"
}
mkdir -p "$D/inproc/state"
echo "{ \"stateDir\": \"$D/inproc/state\" }" > "$D/inproc.json"
"$NODE" "$BENCH/lib/make-sessions.ts" --db "$D/inproc/state/doorman.db" --count "$SESSIONS" > /dev/null
start_tree base "$PORT_BASE"
start_tree head "$PORT_HEAD"
if [ "$METRICS" = 1 ]; then
  wait_port "$METRICS_PORT"
  # authd's metrics socket may come a moment after its session socket
  for i in $(seq 1 50); do
    curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" | grep -q '^doorman_authd_up 1' && break
    [ "$i" = 50 ] && { echo "head's metrics do not show authd up; see $D/head/serve.log" >&2; exit 1; }
    sleep 0.2
  done
  ( while sleep "$SCRAPE_EVERY"; do curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$METRICS_PORT/metrics" || true; done ) &
  SCRAPER=$!
fi

# authd's CPU time so far (user + system), in clock ticks
authd_ticks() { awk '{print $14 + $15}' "/proc/$(cat "$D/$1/state/run/authd.pid")/stat"; }
lookup_load() { # lookup_load base|head: the driver's JSON line
  local t=$1
  node "$KIT/lib/helper-bench.js" --label "lookups via shim+authd, $t" --concurrency "$INFLIGHT" \
    --setup "$D/keys.txt" --requests "$D/lookups.txt" -- "${TREE[$t]}/dist/bin/doorman-shim" --concurrent "$D/$t/state/run/session.sock"
}
lookup_record() { # lookup_record base|head RUN MACHINE RESULT AUTHD_TICKS
  local cpu
  # authd's share, which the driver cannot see: its CPU per lookup over this run (the --setup keys included)
  cpu=$(awk -v t="$5" -v hz="$(getconf CLK_TCK)" -v n="$((LOOKUPS + SESSIONS))" 'BEGIN{printf "%.2f", t * 1e6 / hz / n}')
  record "$OUT" "$3" "$4" "{\"case\":\"lookups\",\"tree\":\"$1\",\"sha\":\"$( [ "$1" = base ] && echo "$BASE_SHA" || echo "$HEAD_SHA")\",\"run\":$2,\"paired\":$PAIRED,\"authd_cpu_us_per_lookup\":$cpu}" > /dev/null
  tail -1 "$OUT" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("  %-5s lookups %9.0f /s  p99 %6.0f us  authd CPU %5.2f us/lookup  replies %s" % (r["tree"], r["per_sec"], r["lat_us"]["p99"], r["authd_cpu_us_per_lookup"], r["replies"]))'
}
login_load() { # login_load base|head: the load generator's JSON line
  local t=$1 port=$PORT_BASE
  [ "$t" = head ] && port=$PORT_HEAD
  timeout $((DURATION + 30)) "$NODE" "$BENCH/lib/login-load.ts" --url "http://127.0.0.1:$port/api/login/" \
    --key-file "$D/$t/api-key" --connections "$CONNS" --duration "$DURATION" --server-pid "${SERVE[$t]}" \
    --mode proxied --proxy-key-file "$D/$t/state/proxy-key" --clients "$SESSIONS" --first 0 --users "$USERS" \
    --label "login API ($USERS users), $t"
}
login_record() { # login_record base|head RUN MACHINE RESULT AUTHD_TICKS
  local authd
  # authd's CPU meanwhile (it sees each commit), per login
  authd=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("%.2f" % (int(sys.argv[2]) * 1e6 / int(sys.argv[3]) / max(1, sum(r["statuses"].values()))))' "$4" "$5" "$(getconf CLK_TCK)")
  record "$OUT" "$3" "$4" "{\"case\":\"logins\",\"tree\":\"$1\",\"sha\":\"$( [ "$1" = base ] && echo "$BASE_SHA" || echo "$HEAD_SHA")\",\"run\":$2,\"paired\":$PAIRED,\"users\":\"$USERS\",\"authd_cpu_us_per_login\":$authd}" > /dev/null
  tail -1 "$OUT" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("  %-5s logins  %9.0f /s  p99 %6.2f ms  server CPU %4.0f us/login (authd %4.1f)  statuses %s" % (r["tree"], r["per_sec"], r["lat_us"]["p99"]/1e3, r.get("server_cpu_us_per_req") or 0, r["authd_cpu_us_per_login"], r["statuses"]))'
}
alone() { # alone lookup|login base|head RUN: one tree's load, the other tree idle
  local what=$1 m res before
  m=$(machine_json)
  before=$(authd_ticks "$2")
  res=$("${what}_load" "$2")
  "${what}_record" "$2" "$3" "$m" "$res" "$(( $(authd_ticks "$2") - before ))"
}
# PAIRED=1: both trees' lookups at once, then both trees' logins, each with its own load, so whatever else the
# machine does falls on both alike (they share the two cores with each other too: lower throughput, a fairer CPU
# per lookup or login)
paired() { # paired lookup|login RUN
  local what=$1 m
  local -A before=()
  m=$(machine_json)
  local first=base second=head
  # the one started first flips every run, as the order does unpaired
  [ $(($2 % 2)) = 0 ] && first=head second=base
  for t in base head; do before[$t]=$(authd_ticks "$t"); done
  "${what}_load" "$first" > "$D/$first/$what.json" &
  "${what}_load" "$second" > "$D/$second/$what.json"
  wait $!
  for t in base head; do
    "${what}_record" "$t" "$2" "$m" "$(cat "$D/$t/$what.json")" "$(( $(authd_ticks "$t") - before[$t] ))"
  done
}

mkdir -p "$RESULTS"; touch "$OUT"
START=$(wc -l < "$OUT")
for run in $(seq 1 "$RUNS"); do
  echo "run $run/$RUNS"
  # the order flips every run, so neither tree always goes first
  order="base head"; [ $((run % 2)) = 0 ] && order="head base"
  if [ "$PAIRED" = 1 ]; then paired lookup "$run"; else for t in $order; do alone lookup "$t" "$run"; done; fi
  if [ "$PAIRED" = 1 ]; then paired login "$run"; else for t in $order; do alone login "$t" "$run"; done; fi
done
if [ "$METRICS" = 1 ]; then
  scraped=$(curl -sf "http://127.0.0.1:$METRICS_PORT/metrics")
  echo "  head's own count of what it served: $(grep -E '^doorman_lookups_total\{kind="session",answer="OK"\}' <<< "$scraped"), $(grep -E '^doorman_logins_total\{source="api"\}' <<< "$scraped")"
  # how many logins shared a commit, on average (the group commit's batch; each commit is one write transaction)
  echo "  head's commits: $(grep -E '^doorman_store_write_duration_seconds_count\{process="serve"\}' <<< "$scraped")"
fi
echo
echo "Side by side (mean of $RUNS runs each, this invocation; cost = how much less head does than base):"
tail -n +"$((START + 1))" "$OUT" | python3 -c '
import json, sys, statistics
rows = [json.loads(l) for l in sys.stdin if l.strip()]
def mean(case, tree, pick):
    v = [pick(r) for r in rows if r.get("case") == case and r.get("tree") == tree]
    return statistics.mean(v) if v else float("nan")
print("  %-34s %12s %12s %8s" % ("", "base " + sys.argv[1], "head " + sys.argv[2], "cost"))
for case, what, pick in [("lookups", "lookups/s (shim -> authd)", lambda r: r["per_sec"]),
                         ("logins", "logins/s (login API)", lambda r: r["per_sec"])]:
    b, h = mean(case, "base", pick), mean(case, "head", pick)
    print("  %-34s %12.0f %12.0f %7.1f%%" % (what, b, h, (b - h) / b * 100))
for case, what, pick in [("lookups", "lookup p99 us", lambda r: r["lat_us"]["p99"]),
                         ("logins", "login p99 ms", lambda r: r["lat_us"]["p99"] / 1e3),
                         ("lookups", "authd CPU us/lookup", lambda r: r["authd_cpu_us_per_lookup"]),
                         ("logins", "serve CPU us/login", lambda r: r.get("server_cpu_us_per_req") or 0)]:
    b, h = mean(case, "base", pick), mean(case, "head", pick)
    print("  %-34s %12.2f %12.2f %7.1f%%" % (what, b, h, (h - b) / b * 100))
# run by run: head against base of the same run (with PAIRED=1, both trees ran at the same time), as the spread to
# read the means against
for case, what, pick in [("lookups", "authd CPU us/lookup", lambda r: r["authd_cpu_us_per_lookup"]),
                         ("logins", "serve CPU us/login", lambda r: r.get("server_cpu_us_per_req") or 0)]:
    runs = sorted({r["run"] for r in rows if r.get("case") == case})
    d = []
    for n in runs:
        pair = {r["tree"]: pick(r) for r in rows if r.get("case") == case and r["run"] == n}
        if "base" in pair and "head" in pair and pair["base"]:
            d.append((pair["head"] - pair["base"]) / pair["base"] * 100)
    if d:
        print("  %-34s run by run: median %+.1f%%, %+.1f%% to %+.1f%% (%d of %d runs head higher)"
              % (what, statistics.median(d), min(d), max(d), sum(1 for x in d if x > 0), len(d)))
' "$BASE_SHA" "$HEAD_SHA"
echo
# The counting itself, where other load falls on both sides alike: head's authd session handler in one process,
# called plain and through the counting wrapper in alternating rounds (bench/lib/lookup-count-cost.ts).
echo "In one process (head's session handler over the same DB, plain vs counted, median of 7 rounds):"
"$NODE" "$BENCH/lib/lookup-count-cost.ts" --config "$D/inproc.json" --sessions "$SESSIONS" | tee -a "$OUT" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("  plain %.0f ns/lookup, counted %.0f ns/lookup: %+.0f ns (%+.1f%%)" % (r["plain_ns"], r["counted_ns"], r["cost_ns"], r["cost_pct"]))'
# The audit row and the login's counts, the same way: head's SQLite store in one process, a login plain, with
# its audit event, and with its counts too, in alternating rounds (bench/lib/login-audit-cost.ts).
echo "In one process (head's store over a copy of the DB, a login plain / audited / audited and counted, median of 7 rounds):"
"$NODE" "$BENCH/lib/login-audit-cost.ts" --config "$D/inproc.json" --sessions "$SESSIONS" --users "$USERS" | tee -a "$OUT" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("  plain %.1f us/login, audited %.1f (%+.1f), audited and counted %.1f (%+.1f)" % (r["plain_us"], r["audited_us"], r["audit_cost_us"], r["counted_us"], r["count_cost_us"]))'
