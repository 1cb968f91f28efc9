#!/bin/sh
# The README's first command as a newcomer meets it, for CI (.ci/run): a fresh clone of this checkout in a
# temporary directory (no node_modules, an empty npm cache), `scripts/quickstart.sh`, then the curl lines it
# prints: refused before login, a login through the API, the next request identified as alice (200 from the
# origin, or Squid's own 502/503 on a machine without internet access), alice in access.log, logout, stop.
# The quick start keeps its state in /var/lib/doorman, which an earlier run (or a newcomer who tried it and did
# not log out) may have left behind: the check ends any session for 127.0.0.1 before its first request, and
# expects the 407 Squid asks for a password with where an applied directory or a joined domain left the proxy
# authenticating. It never removes the state itself (the machine's Doorman may be using it).
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

# A known start: nobody logged in on 127.0.0.1. Squid was started just now and has asked nothing yet, so no
# answer of its cache can outlive this.
if bin/doorman sessions end 127.0.0.1 >/dev/null 2>&1; then
  echo "check-quickstart: ended a session for 127.0.0.1 left in /var/lib/doorman by an earlier run"
fi
refused=403
if grep -qs 'proxy_auth REQUIRED' /var/lib/doorman-squid/*.conf; then
  refused=407 # a directory applied, or a domain joined, by an earlier run: Squid asks for a password
fi
before=$(status -x "$proxy" "$site")
[ "$before" = "$refused" ] || fail "before login: expected $refused from Squid, got $before"

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
