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
# `npm ci` builds the `kerberos` addon (the Negotiate helper's GSSAPI acceptor) from source: headers and a C++
# toolchain (Debian's g++ brings gcc and libc6-dev, which also build Doorman's helper shim, native/). Seamless
# authentication joins the domain with Samba's net and winbind (ntlm_auth is in winbind).
packages="$packages libkrb5-dev g++ make python3 winbind samba-common-bin"
[ "$mode" = test ] && packages="$packages curl sqlite3 iproute2 util-linux procps"
# The directories the integration tests start (test/harness/slapd.ts, samba-ad.ts). On bookworm `samba` alone
# cannot provision a DC: samba-ad-provision and samba-dsdb-modules are only Recommends, so they are named here.
[ "$mode" = test ] && packages="$packages slapd ldap-utils samba samba-ad-dc samba-ad-provision samba-dsdb-modules \
samba-vfs-modules winbind smbclient krb5-user openssl nftables c-icap"
# The splash and admin screens in a real browser (test/harness/browser.ts). Without --no-install-recommends
# (below) chromium would bring about 117 packages, systemd and udev among them; with it, about 25.
[ "$mode" = test ] && packages="$packages chromium"
# Seamless authentication's tests: an MIT KDC (test/harness/kdc.ts), clients with Kerberos tickets and NTLM
# (curl, python3-gssapi, python3-ntlm-auth), a skewed clock for one client (faketime).
[ "$mode" = test ] && packages="$packages krb5-kdc krb5-admin-server faketime python3-gssapi python3-ntlm-auth"
# The service units in systemd/ are checked with systemd-analyze verify, and authd is run under
# systemd-socket-activate (test/integration/systemd-units.test.ts); the package installs them without
# making systemd PID 1.
[ "$mode" = test ] && packages="$packages systemd"
# Several boxes on one PostgreSQL (issue 15): the tests start throwaway clusters of Debian's PostgreSQL 15 with
# initdb and pg_ctl (test/harness/postgres.ts); its postinst starts nothing without systemd.
[ "$mode" = test ] && packages="$packages postgresql"
# The metrics (docs/metrics.md) are checked with Debian's own Prometheus: promtool lints a scrape, and a real
# prometheus server, started by the test on loopback in a directory of its own, scrapes it. The package's
# service is not started without systemd as PID 1 (and is not used: the tests run their own).
[ "$mode" = test ] && packages="$packages prometheus"

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
# unpack PACKAGE[=VERSION] DIR: the package's .deb (apt-get download) unpacked into a new DIR, never installed.
unpack() {
  tmp=$(mktemp -d)
  # apt-get download fetches as user _apt (else it warns and fetches as root): let it write here
  chmod 755 "$tmp"
  if id _apt >/dev/null 2>&1; then chown _apt "$tmp"; fi
  # Package lists that do not know that version yet: update them once and try again.
  (cd "$tmp" && apt-get download -q "$1") || { apt-get update -q; (cd "$tmp" && apt-get download -q "$1"); }
  rm -rf "$2"
  mkdir -p "$2"
  dpkg-deb -x "$tmp"/*.deb "$2"
  rm -rf "$tmp"
}
if [ "$mode" = test ]; then
  dest=/opt/doorman-test/squid-openssl
  # The installed squid's version (one Debian source builds both), so both share /usr/share/squid's pages.
  want=$(dpkg-query -W -f='${Version}' squid)
  if [ "$(cat "$dest/version" 2>/dev/null)" != "$want" ] || [ ! -x "$dest/usr/sbin/squid" ]; then
    unpack "squid-openssl=$want" "$dest.new"
    echo "$want" > "$dest.new/version"
    rm -rf "$dest"
    mv "$dest.new" "$dest"
  fi
  "$dest/usr/sbin/squid" -v | grep -q -- '--with-openssl' || { echo "$0: $dest/usr/sbin/squid is not the OpenSSL build" >&2; exit 1; }
  echo "squid-openssl $want unpacked in $dest (not installed)"

  # A client that wraps NTLM in SPNEGO, as Windows does, needs gss-ntlmssp; installed, it would add a GSS
  # mechanism to every program on the machine (/etc/gss/mech.d), Squid's and Doorman's acceptors included. So
  # it is unpacked, never installed, and a test's client alone names it with GSS_MECH_CONFIG
  # (test/harness/gss-ntlmssp.ts).
  dest=/opt/doorman-test/gss-ntlmssp
  if [ ! -f "$dest/mech.conf" ]; then
    unpack gss-ntlmssp "$dest.new"
    so=$(find "$dest.new" -name gssntlmssp.so | head -n 1)
    [ -n "$so" ] || { echo "$0: no gssntlmssp.so in gss-ntlmssp" >&2; exit 1; }
    printf 'gssntlmssp_v1\t1.3.6.1.4.1.311.2.2.10\t%s\n' "$dest${so#"$dest.new"}" > "$dest.new/mech.conf"
    rm -rf "$dest"
    mv "$dest.new" "$dest"
  fi
  echo "gss-ntlmssp unpacked in $dest (not installed): GSS_MECH_CONFIG=$dest/mech.conf"
fi
