#!/bin/sh
# Debian 12 packages Doorman needs, installed with apt-get as root.
#   install-system.sh run    what running Doorman needs: Squid, and Node/npm if the machine has none
#   install-system.sh test   that plus what the integration tests start for real (curl, sqlite3, ...)
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
