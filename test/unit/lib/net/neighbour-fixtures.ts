/**
 * `ip -json` output captured on a Debian 12 machine (iproute2 6.1.0): a veth pair nbc-h (host) / nbc-n (inside a
 * namespace), 10.250.7.1/30 and fd57::1/64 on the host side, 10.250.7.2/30 and fd57::2/64 (MAC 16:b8:30:8a:3a:08)
 * inside; the namespace's curl to the host filled the host's table, a curl to fd57::99 (nobody) made an
 * INCOMPLETE, then FAILED, entry; `ip neigh add` made the PERMANENT, NOARP/router, all-zero and proxy entries.
 * Kept verbatim: the parser must read what ip really prints.
 */
export const CLIENT_MAC = '16:b8:30:8a:3a:08';

/** `ip -j neigh show to 10.250.7.2` (a `to` filter keeps `dev`). */
export const NEIGH_TO_IPV4 =
  '[{"dst":"10.250.7.2","dev":"nbc-h","lladdr":"16:b8:30:8a:3a:08","state":["DELAY"]}]\n';

/** `ip -j neigh show to fd57::2` */
export const NEIGH_TO_IPV6 =
  '[{"dst":"fd57::2","dev":"nbc-h","lladdr":"16:b8:30:8a:3a:08","state":["STALE"]}]\n';

/** `ip -j neigh show to fd57::99` after nobody answered. */
export const NEIGH_TO_FAILED = '[{"dst":"fd57::99","dev":"nbc-h","state":["FAILED"]}]\n';

/** `ip -j neigh show to fd57::5` (added with lladdr 00:00:00:00:00:00 nud stale). */
export const NEIGH_TO_ZERO =
  '[{"dst":"fd57::5","dev":"nbc-h","lladdr":"00:00:00:00:00:00","state":["STALE"]}]\n';

/** `ip -j neigh show to 203.0.113.5`: no entry. */
export const NEIGH_TO_NOTHING = '[]\n';

/** `ip -j neigh show dev nbc-h` while fd57::99 was being asked for (a `dev` filter drops `dev`). */
export const NEIGH_DEV_INCOMPLETE =
  '[{"dst":"10.250.7.3","lladdr":"02:00:5e:10:00:01","state":["PERMANENT"]},{"dst":"10.250.7.2","lladdr":"16:b8:30:8a:3a:08","state":["REACHABLE"]},{"dst":"fd57::2","lladdr":"16:b8:30:8a:3a:08","state":["REACHABLE"]},{"dst":"fd57::5","lladdr":"00:00:00:00:00:00","state":["STALE"]},{"dst":"fd57::99","state":["INCOMPLETE"]}]\n';

/** `ip -j neigh show` (the whole table: other links too). */
export const NEIGH_ALL =
  '[{"dst":"10.214.2.2","dev":"dbgsh","lladdr":"f6:3c:b7:f1:f2:04","state":["STALE"]},{"dst":"10.250.7.3","dev":"nbc-h","lladdr":"02:00:5e:10:00:01","state":["PERMANENT"]},{"dst":"10.250.7.2","dev":"nbc-h","lladdr":"16:b8:30:8a:3a:08","state":["REACHABLE"]},{"dst":"192.0.2.1","dev":"eth0","lladdr":"02:fc:00:00:00:05","state":["STALE"]},{"dst":"fd00::1","dev":"eth0","state":["FAILED"]},{"dst":"fd57::2","dev":"nbc-h","lladdr":"16:b8:30:8a:3a:08","state":["REACHABLE"]},{"dst":"fe80::14b8:30ff:fe8a:3a08","dev":"nbc-h","lladdr":"16:b8:30:8a:3a:08","state":["DELAY"]},{"dst":"fd57::5","dev":"nbc-h","lladdr":"00:00:00:00:00:00","state":["STALE"]},{"dst":"fd57::99","dev":"nbc-h","state":["FAILED"]}]\n';

/** `ip -j neigh show nud all dev nbc-h`: NOARP entries (multicast MACs, and one added with `router`). */
export const NEIGH_NUD_ALL =
  '[{"dst":"10.250.7.3","lladdr":"02:00:5e:10:00:01","state":["PERMANENT"]},{"dst":"10.250.7.2","lladdr":"16:b8:30:8a:3a:08","state":["REACHABLE"]},{"dst":"ff02::2","lladdr":"33:33:00:00:00:02","state":["NOARP"]},{"dst":"fd57::6","lladdr":"5e:11:22:33:44:55","router":null,"state":["NOARP"]},{"dst":"fd57::2","lladdr":"16:b8:30:8a:3a:08","state":["REACHABLE"]},{"dst":"ff02::1:ff00:99","lladdr":"33:33:ff:00:00:99","state":["NOARP"]},{"dst":"fe80::14b8:30ff:fe8a:3a08","lladdr":"16:b8:30:8a:3a:08","state":["DELAY"]},{"dst":"fd57::5","lladdr":"00:00:00:00:00:00","state":["STALE"]},{"dst":"ff02::1:ff73:2001","lladdr":"33:33:ff:73:20:01","state":["NOARP"]},{"dst":"ff02::16","lladdr":"33:33:00:00:00:16","state":["NOARP"]},{"dst":"fd57::99","state":["FAILED"]}]\n';

/** `ip -j -s neigh show dev nbc-h`: statistics add keys the parser ignores. */
export const NEIGH_STATS =
  '[{"dst":"10.250.7.3","lladdr":"02:00:5e:10:00:01","used":3,"confirmed":3,"updated":3,"probes":0,"state":["PERMANENT"]},{"dst":"10.250.7.2","lladdr":"16:b8:30:8a:3a:08","refcnt":1,"used":7,"confirmed":7,"updated":7,"probes":1,"state":["REACHABLE"]},{"dst":"fd57::2","lladdr":"16:b8:30:8a:3a:08","refcnt":1,"used":7,"confirmed":7,"updated":7,"probes":1,"state":["REACHABLE"]},{"dst":"fe80::14b8:30ff:fe8a:3a08","lladdr":"16:b8:30:8a:3a:08","refcnt":1,"used":2,"confirmed":62,"updated":2,"probes":0,"state":["DELAY"]},{"dst":"fd57::5","lladdr":"00:00:00:00:00:00","used":3,"confirmed":63,"updated":3,"probes":0,"state":["STALE"]},{"dst":"fd57::99","used":3,"confirmed":63,"updated":0,"probes":6,"state":["FAILED"]}]\n';

/** `ip -j neigh show proxy`: a proxy-NDP entry has neither lladdr nor state. */
export const NEIGH_PROXY = '[{"dst":"fd57::7","dev":"nbc-h","proxy":null}]\n';

/** `ip -j route get …` */
export const ROUTE_ON_LINK =
  '[{"dst":"10.250.7.2","dev":"nbc-h","prefsrc":"10.250.7.1","flags":[],"uid":0,"cache":[]}]\n';
export const ROUTE_ON_LINK_IPV6 =
  '[{"dst":"fd57::99","from":"::","dev":"nbc-h","protocol":"kernel","prefsrc":"fd57::1","metric":256,"flags":[],"pref":"medium"}]\n';
export const ROUTE_VIA_GATEWAY =
  '[{"dst":"203.0.113.5","gateway":"192.0.2.1","dev":"eth0","prefsrc":"192.0.2.2","flags":[],"uid":0,"cache":[]}]\n';
export const ROUTE_LOCAL =
  '[{"type":"local","dst":"127.0.0.1","dev":"lo","prefsrc":"127.0.0.1","flags":[],"uid":0,"cache":["local"]}]\n';
export const ROUTE_LOCAL_IPV6 =
  '[{"type":"local","dst":"::1","from":"::","dev":"lo","table":"local","protocol":"kernel","prefsrc":"::1","metric":0,"flags":[],"pref":"medium"}]\n';
export const ROUTE_BROADCAST =
  '[{"type":"broadcast","dst":"10.250.7.3","dev":"nbc-h","prefsrc":"10.250.7.1","flags":[],"uid":0,"cache":["local","brd"]}]\n';
export const ROUTE_MULTICAST =
  '[{"type":"multicast","dst":"224.0.0.1","dev":"eth0","prefsrc":"192.0.2.2","flags":["rt_offload_failed"],"uid":0,"cache":["local","mc"]}]\n';
/** stderr of `ip route get` (exit 2) for an `unreachable` route, a `blackhole` one, and with no route at all. */
export const ROUTE_ERR_NO_ROUTE = 'RTNETLINK answers: No route to host\n';
export const ROUTE_ERR_BLACKHOLE = 'RTNETLINK answers: Invalid argument\n';
export const ROUTE_ERR_UNREACHABLE = 'RTNETLINK answers: Network is unreachable\n';

/** /proc/net/arp's header line (Debian 12, Linux 6.1): the whole file when the table is empty. */
export const ARP_HEADER = 'IP address       HW type     Flags       HW address            Mask     Device\n';

/**
 * /proc/net/arp with the veth client resolved, a PERMANENT entry, an INCOMPLETE one (flags 0, zero MAC) and a
 * neighbour on another link.
 */
export const ARP_TABLE =
  ARP_HEADER +
  '10.250.7.2       0x1         0x2         16:b8:30:8a:3a:08     *        nbc-h\n' +
  '10.250.7.3       0x1         0x6         02:00:5e:10:00:01     *        nbc-h\n' +
  '10.250.7.9       0x1         0x0         00:00:00:00:00:00     *        nbc-h\n' +
  '192.0.2.1        0x1         0x2         02:fc:00:00:00:05     *        eth0\n';
