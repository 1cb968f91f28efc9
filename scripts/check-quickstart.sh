#!/bin/sh
# The README's first command as a newcomer meets it, for CI (.ci/run): a fresh clone of this checkout in a
# temporary directory (no node_modules, an empty npm cache), `scripts/quickstart.sh`, then the curl lines it
# prints: refused before login, a login through the API, the next request identified as alice (200 from the
# origin, or Squid's own 502/503 on a machine without internet access), alice in access.log, logout, stop.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/doorman-quickstart.XXXXXX)
chmod 755 "$tmp" # Squid's helpers run as proxy and must reach the clone
cleanup() {
  [ -x "$tmp/doorman/scripts/quickstart.sh" ] && (cd "$tmp/doorman" && scripts/quickstart.sh stop >/dev/null) || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "check-quickstart: $*" >&2; exit 1; }

git clone -q "$src" "$tmp/doorman"
cd "$tmp/doorman"
[ ! -e node_modules ] || fail "the clone has node_modules"
npm_config_cache="$tmp/npm-cache" scripts/quickstart.sh >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "scripts/quickstart.sh failed"; }
cat "$tmp/out"
key=$(sed -n 's/^  \(dm\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\)$/\1/p' "$tmp/out")
[ -n "$key" ] || fail "no API key in the quick start's output"

proxy=http://127.0.0.1:3130
site=http://example.com/
status() { curl -s -o /dev/null -w '%{http_code}' --max-time 60 "$@"; }

before=$(status -x "$proxy" "$site")
[ "$before" = 403 ] || fail "before login: expected 403 from Squid, got $before"

login=$(curl -s --max-time 10 -x "$proxy" -d "api_key=$key" -d username=alice http://127.0.0.1:8180/api/login/)
echo "login: $login"
[ "$login" = '{"ok":true,"username":"alice","ip":"127.0.0.1"}' ] || fail "login through Squid: $login"

headers=$(curl -s -o /dev/null -D - --max-time 60 -x "$proxy" "$site" | tr -d '\r')
code=$(printf '%s\n' "$headers" | sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p')
user=$(printf '%s\n' "$headers" | sed -n 's/^[Xx]-[Dd]oorman-[Uu]ser: //p')
echo "after login: $code, X-Doorman-User: $user"
case $code in 200 | 502 | 503) ;; *) fail "after login: expected 200 (or 502/503 offline), got $code" ;; esac
[ "$user" = alice ] || fail "after login: X-Doorman-User is '$user', not alice"
tail -n 1 /var/lib/doorman-squid/logs/access.log | grep -q ' alice ' || fail "access.log does not show alice"

logout=$(curl -s --max-time 10 -x "$proxy" -d "api_key=$key" http://127.0.0.1:8180/api/logout/)
[ "$logout" = '{"ok":true,"ip":"127.0.0.1","ended":true}' ] || fail "logout: $logout"
scripts/quickstart.sh stop
echo "check-quickstart: the quick start works in a fresh clone"
