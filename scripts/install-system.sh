#!/bin/sh
# Debian 12 packages Doorman needs, installed with apt-get as root.
#   install-system.sh run    what running Doorman needs: Squid, and Node/npm if the machine has none
#   install-system.sh test   that plus what the integration tests start for real (curl, sqlite3, ...), Chromium
#                            for the browser tests, and Squid's OpenSSL build unpacked beside the system Squid
# Installing a package never starts a second Squid of ours; if the Debian package starts the system Squid on
# :3128, that one is left alone (Doorman's own Squid uses its own port, pid file and logs).
set -eu
mode=${1:-run}
case $mode in run|test) ;; *) echo "usage: $0 run|test" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "$0: run as root (apt-get)" >&2; exit 1; }

packages="squid ca-certificates curl"
command -v npm >/dev/null 2>&1 || packages="$packages nodejs npm"
[ "$mode" = test ] && packages="$packages curl sqlite3 iproute2 util-linux procps libkrb5-dev"
# The directories the integration tests start (test/harness/slapd.ts, samba-ad.ts). On bookworm `samba` alone
# cannot provision a DC: samba-ad-provision and samba-dsdb-modules are only Recommends, so they are named here.
[ "$mode" = test ] && packages="$packages slapd ldap-utils samba samba-ad-dc samba-ad-provision samba-dsdb-modules \
samba-vfs-modules winbind smbclient krb5-user openssl nftables c-icap"
# The splash and admin screens in a real browser (test/harness/browser.ts). Without --no-install-recommends
# (below) chromium would bring about 117 packages, systemd and udev among them; with it, about 25.
[ "$mode" = test ] && packages="$packages chromium"

missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing
fi
echo "system packages ready:$packages"

# The ssl-bump tests need Squid built with OpenSSL (Debian squid-openssl), but installing that package removes
# the GnuTLS squid the other tests (and an administrator's Squid) use. So the test set-up unpacks it beside
# the system's instead, never installed: /opt/doorman-test/squid-openssl/usr/sbin/squid (same version, same
# /usr/share/squid and /usr/lib/squid helpers as the installed squid) and .../usr/lib/squid/security_file_certgen.
# test/harness/squid-openssl.ts finds them there. Done again only when the installed squid's version changes.
if [ "$mode" = test ]; then
  dest=/opt/doorman-test/squid-openssl
  # The installed squid's version (one Debian source builds both), so both share /usr/share/squid's pages.
  want=$(dpkg-query -W -f='${Version}' squid)
  if [ "$(cat "$dest/version" 2>/dev/null)" != "$want" ] || [ ! -x "$dest/usr/sbin/squid" ]; then
    tmp=$(mktemp -d)
    # apt-get download fetches as user _apt (else it warns and fetches as root): let it write here
    chmod 755 "$tmp"
    id _apt >/dev/null 2>&1 && chown _apt "$tmp"
    # Package lists that do not know that version yet: update them once and try again.
    (cd "$tmp" && apt-get download -q "squid-openssl=$want") || {
      apt-get update -q
      (cd "$tmp" && apt-get download -q "squid-openssl=$want")
    }
    rm -rf "$dest.new"
    mkdir -p "$dest.new"
    dpkg-deb -x "$tmp"/squid-openssl_*.deb "$dest.new"
    echo "$want" > "$dest.new/version"
    rm -rf "$dest" "$tmp"
    mv "$dest.new" "$dest"
  fi
  "$dest/usr/sbin/squid" -v | grep -q -- '--with-openssl' || { echo "$0: $dest/usr/sbin/squid is not the OpenSSL build" >&2; exit 1; }
  echo "squid-openssl $want unpacked in $dest (not installed)"
fi
