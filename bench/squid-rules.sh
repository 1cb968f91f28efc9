#!/bin/bash
# What each rule of Doorman's generated include costs Squid, in instructions per request (callgrind), which a
# shared machine does not disturb the way it disturbs requests/s. Squid 5.7 (`squid -N`, as user proxy, under
# valgrind --tool=callgrind) on the configuration `doorman squid-conf --standalone` writes from a default config,
# to the kit's origin, load from the kit's http-proxy-bench.js (CONNS keep-alive connections from as many
# addresses). Instructions per request = (Squid's total after N2 requests - after N1) / (N2 - N1): start-up and
# shutdown cancel out. The cases:
#   a'        the kit's (a): http_access allow all, the native access log, no include
#   d0        the generated configuration with "allow doorman_identified" turned into "allow all" (no lookups)
#   d0 - X    d0 with one part taken out: the doorman_site ACL and the lines using it, the port guard in front of
#             its pattern (the pattern checked on every request, as before), the header rules, always_direct,
#             the protections (http_access deny lines), the doorman log format (native instead), the reply header
#   d0 bare   all of those out
# Root (Squid drops to proxy); about 40 s per case. Printed, never asserted.
#   bench/squid-rules.sh
# env: N1=1000 N2=5000 CONNS=50 SQUID_PORT=3393 ORIGIN_PORT=8393 CASES="a d0 ..." (names as in the table)
set -euo pipefail
. "$(dirname "$0")/lib/env.sh"
[ "$(id -u)" = 0 ] || { echo "run as root (Squid drops to user proxy)" >&2; exit 2; }
command -v valgrind > /dev/null || { echo "needs valgrind (apt-get install valgrind)" >&2; exit 2; }
N1=${N1:-1000} N2=${N2:-5000} CONNS=${CONNS:-50} SQUID_PORT=${SQUID_PORT:-3393} ORIGIN_PORT=${ORIGIN_PORT:-8393}
CASES=${CASES:-a d0 d0-unguarded d0-nosite d0-nohdraccess d0-nohdradd d0-nodirect d0-nosafe d0-nativelog d0-noreply d0-bare}
D=$SCRATCH/squid-rules
need_free_port "$SQUID_PORT"; need_free_port "$ORIGIN_PORT"
rm -rf "$D"; mkdir -p "$D/state" "$D/conf" "$D/cg" "$D/a/logs"; chmod 755 "$SCRATCH" "$D"
echo "{ \"baseUrl\": \"http://127.0.0.1:8180/\", \"stateDir\": \"$D/state\" }" > "$D/doorman.json"
(cd "$ROOT" && "$NODE" -e "import('./lib/security/proxy-key.ts').then((m) => m.ensureProxyKey('$D/state/proxy-key'))")
SQ=$D/sq
"$ROOT/bin/doorman" squid-conf --standalone "$SQ" --port "127.0.0.1:$SQUID_PORT" --loopback-dns --config "$D/doorman.json" > /dev/null
echo "127.0.0.1 doorman-proxy" > "$D/hosts"   # as in squid-e2e.sh: the generated dst acl resolves visible_hostname
cat > "$D/conf/a.conf" <<CONF
http_port 127.0.0.1:$SQUID_PORT
visible_hostname proxy.example.test
pid_filename $D/a/squid.pid
cache_log $D/a/logs/cache.log
access_log stdio:$D/a/logs/access.log squid
coredump_dir $D/a/logs
cache deny all
pinger_enable off
dns_nameservers 127.0.0.1
shutdown_lifetime 0 seconds
http_access allow all
CONF
variant() { # variant NAME SED-ON-INCLUDE [SED-ON-SQUID.CONF]
  sed "$2" "$SQ/doorman.conf" > "$SQ/doorman-$1.conf"
  sed -e "s#^include $SQ/doorman.conf\$#include $SQ/doorman-$1.conf#" -e "${3:-}" "$SQ/squid.conf" > "$SQ/squid-$1.conf"
  printf 'include %s\nhosts_file %s\n' "$SQ/squid-$1.conf" "$D/hosts" > "$D/conf/$1.conf"
}
D0='s/^http_access allow doorman_identified$/http_access allow all/'
variant d0 "$D0"
variant d0-unguarded "$D0;/^acl doorman_site_port /d;/^acl doorman_site all-of/d;s/^acl doorman_site_url /acl doorman_site /"
variant d0-nosite "$D0;/doorman_site/d"
variant d0-nohdraccess "$D0;/^request_header_access/d"
variant d0-nohdradd "$D0;/^request_header_add/d"
variant d0-nodirect "$D0;/^always_direct/d"
variant d0-nosafe "$D0;/^http_access deny/d"
variant d0-nativelog "$D0" 's/ doorman$/ squid/'
variant d0-noreply "$D0" '/^reply_header_add/d'
variant d0-bare "$D0;/doorman_site/d;/^request_header_a/d;/^always_direct/d;/^http_access deny/d" 's/ doorman$/ squid/;/^reply_header_add/d'
chown -R proxy:proxy "$D/state" "$SQ" "$D/a" "$D/cg"
for c in $CASES; do
  squid -k parse -f "$D/conf/$c.conf" 2> "$D/parse.log" || { cat "$D/parse.log"; exit 1; }
done

ORIGIN= SQUID=
trap 'stop_pid "$SQUID"; stop_pid "$ORIGIN"' EXIT
node "$LIB/origin.js" "$ORIGIN_PORT" > "$D/origin.log" 2>&1 & ORIGIN=$!
wait_port "$ORIGIN_PORT"
first=127.0.1.1
instructions() { # instructions CASE N -> "Ir requests"
  local c=$1 n=$2 out=$D/cg/$1-$2
  setpriv --reuid=proxy --regid=proxy --init-groups valgrind --tool=callgrind --vgdb=no \
    --callgrind-out-file="$out.callgrind" squid -N -f "$D/conf/$c.conf" > "$out.log" 2>&1 & SQUID=$!
  for _ in $(seq 400); do ss -ltnH "sport = :$SQUID_PORT" | grep -q . && break; sleep 0.05; done
  node "$LIB/http-proxy-bench.js" --proxy "127.0.0.1:$SQUID_PORT" --url "http://127.0.0.1:$ORIGIN_PORT/" \
    --connections "$CONNS" --src-base "$first" --duration 120 --max-requests "$n" > "$out.json"
  kill -TERM "$SQUID"; wait "$SQUID" 2> /dev/null || true; SQUID=
  echo "$(awk '/^summary:/{print $2}' "$out.callgrind") $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["requests"] if r["statuses"].get("200") == r["requests"] else 0)' "$out.json")"
}
echo "Squid instructions per request (callgrind; ($N2 - $N1) requests, $CONNS connections; $(squid -v | head -1))"
base=
for c in $CASES; do
  read -r i1 r1 <<< "$(instructions "$c" "$N1")"
  read -r i2 r2 <<< "$(instructions "$c" "$N2")"
  [ "$r1" -gt 0 ] && [ "$r2" -gt "$r1" ] || { echo "  $c: requests failed; see $D/cg/$c-*.log" >&2; exit 1; }
  per=$(( (i2 - i1) / (r2 - r1) ))
  [ -n "$base" ] || base=$per
  printf '  %-16s %9d  %6.1f%% of %s\n' "$c" "$per" "$(echo "100 * $per / $base" | bc -l)" "${CASES%% *}"
done
