#!/bin/sh
# Quick start on a Debian 12 machine, as root: Doorman's web app on 127.0.0.1:8180 and a Squid of its own on
# 127.0.0.1:3130, both on loopback, with the embedded default configuration (session DB in /var/lib/doorman).
# An existing Squid, its configuration and its port are never touched.
#   scripts/quickstart.sh        install, start, print an API key and the curl lines to try
#   scripts/quickstart.sh stop   stop both, and doorman-authd (which serve started, and which outlives it)
set -eu
cd "$(dirname "$0")/.."
SQUID_DIR=/var/lib/doorman-squid
SQUID_PORT=3130
DOORMAN_PID=/run/doorman-quickstart.pid
DOORMAN_LOG=/var/log/doorman.log

stop() {
  [ -f "$SQUID_DIR/squid.pid" ] && kill "$(cat "$SQUID_DIR/squid.pid")" 2>/dev/null || true
  [ -f "$DOORMAN_PID" ] && kill "$(cat "$DOORMAN_PID")" 2>/dev/null || true
  rm -f "$DOORMAN_PID"
  # authd answers Squid's helpers and outlives serve on purpose (docs/services.md): stopped on its own.
  bin/doorman authd stop >/dev/null 2>&1 || true
}
if [ "${1:-}" = stop ]; then stop; echo "stopped"; exit 0; fi

scripts/install-system.sh run
[ -x node_modules/node/bin/node ] || npm ci --omit=dev --no-audit --no-fund
if ! setpriv --reuid=proxy --regid=proxy --clear-groups sh -c 'test -r dist/helpers/authd/main.js && test -x dist/bin/doorman-shim'; then
  echo "Squid's user (proxy) cannot read $(pwd): put Doorman where it can, e.g. git clone ... /opt/doorman" >&2
  exit 1
fi
stop

bin/doorman serve >>"$DOORMAN_LOG" 2>&1 &
echo $! >"$DOORMAN_PID"
i=0
until curl -s -o /dev/null http://127.0.0.1:8180/; do
  i=$((i + 1)); [ $i -lt 50 ] || { echo "doorman did not start, see $DOORMAN_LOG" >&2; exit 1; }
  sleep 0.1
done
# "Started" means "answering": authd (which serve starts as proxy) answers a session lookup, so Squid's first
# requests are answered, not refused.
bin/doorman authd status --wait 30 >/dev/null || { echo "doorman-authd did not answer, see $DOORMAN_LOG" >&2; exit 1; }

conf=$(bin/doorman squid-conf --standalone "$SQUID_DIR" --port "127.0.0.1:$SQUID_PORT")
squid -k parse -f "$conf" 2>/dev/null
squid -f "$conf"
# A name no earlier run has taken (two runs in one second, say): the time and a few random bytes.
key=$(bin/doorman api-key create --name "quickstart-$(date +%Y%m%d-%H%M%S)-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')")

cat <<TXT

Doorman is running: web app http://127.0.0.1:8180/ (log $DOORMAN_LOG), its Squid on 127.0.0.1:$SQUID_PORT
(config $conf, access log $SQUID_DIR/logs/access.log). An API key for the login API, shown once:

  $key

Try it (this machine is the client, 127.0.0.1, and talks to Doorman through its Squid, as a client would):
  curl -sI -x http://127.0.0.1:$SQUID_PORT http://example.com/ | head -1       # 403: nobody is logged in here
  curl -x http://127.0.0.1:$SQUID_PORT -d api_key=$key -d username=alice http://127.0.0.1:8180/api/login/
  curl -sI -x http://127.0.0.1:$SQUID_PORT http://example.com/ | grep -i -e ^HTTP -e x-doorman-user
  tail -n 2 $SQUID_DIR/logs/access.log                                        # ... alice ...
  curl -x http://127.0.0.1:$SQUID_PORT -d api_key=$key http://127.0.0.1:8180/api/logout/

The third line shows 200 and "X-Doorman-User: alice"; without internet access Squid answers 503 (or 502)
itself, still with "X-Doorman-User: alice". Squid caches an answer for 5 s (squid.ttl): a logout shows after
at most 6 s (Squid counts whole seconds).

Stop them with: scripts/quickstart.sh stop
TXT
