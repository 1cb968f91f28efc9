import { showValue } from '../errors.ts';
import { classifyMac } from './mac-class.ts';
import { isResolved, usableMac, type NeighbourEntry } from './neighbour-table.ts';
import type { Route } from './route-get.ts';

/**
 * The MAC address of a client, or why there is none, for Device Registration: a device is registered by its
 * MAC, so the portal must know it, and must say why when it cannot.
 *
 * - `ok`: `source` says where it came from: Squid's %>eui (IPv4 only, see fromSquidEui) or the neighbour table.
 *   `locallyAdministered`: a randomised ("private") MAC, see mac-class.ts.
 * - `invalid-address`: the client address given is not an IP address.
 * - `local`: the client is this host itself (the quick start's curl through a Squid on 127.0.0.1).
 * - `not-on-link`: the client is behind a router (or has no route at all): only devices on a link of this host's
 *   (its subnet, its VLAN) have their MAC known here. Squid's %>eui is all zeros for them.
 * - `no-entry`: on a link of this host's, but not in the neighbour table, or the kernel asked and got no answer.
 * - `no-mac`: in the table, without a device MAC (all zeros, a group address, a link without MACs).
 * - `ambiguous`: in the table with two different MACs (on two links): which device is the client is unknown.
 * - `lookup-failed`: the table could not be read (ip missing, timed out, unreadable output).
 */
export type MacLookup =
  | {
      ok: true;
      ip: string;
      mac: string;
      locallyAdministered: boolean;
      source: 'squid' | 'neighbour-table';
      /** The interface the entry is on, when ip said (neighbour table only). */
      dev?: string;
    }
  | { ok: false; reason: MacLookupReason; message: string };

export const MacLookupReasons = [
  'invalid-address',
  'local',
  'not-on-link',
  'no-entry',
  'no-mac',
  'ambiguous',
  'lookup-failed',
] as const;
export type MacLookupReason = (typeof MacLookupReasons)[number];

const fail = (reason: MacLookupReason, message: string): MacLookup => ({ ok: false, reason, message });

/**
 * The MAC Squid supplied as %>eui, when it is a device's: for an IPv4 client Squid reads the ARP table itself
 * when the connection arrives (the same MAC the table holds). Undefined means "ask the neighbour table":
 * - `-` (no value), anything that is not an EUI-48, all zeros (Squid's answer for a routed client), a group
 *   address;
 * - every IPv6 client. Squid 5.7 does not read the NDP table: its %>eui for IPv6 is an EUI-64 made from the
 *   address's interface id (`00-00-00-00-00-00-00-00` for static and privacy addresses; for SLAAC addresses the
 *   id's bytes, U/L bit not flipped back), never the device's MAC, even when it happens to look like one.
 * `ip` is in normaliseIp form.
 */
export function fromSquidEui(ip: string, eui: string | undefined): MacLookup | undefined {
  if (eui === undefined || ip.includes(':')) return undefined;
  const mac = classifyMac(eui);
  if (mac.kind !== 'unicast') return undefined;
  return { ok: true, ip, mac: mac.mac, locallyAdministered: mac.locallyAdministered, source: 'squid' };
}

/**
 * The answer the neighbour table gives for `ip` (normaliseIp form), or undefined when it has no entry for it at
 * all, so that the route must tell why (see fromRoute). Entries for other addresses are ignored.
 */
export function fromNeighbours(ip: string, entries: readonly NeighbourEntry[]): MacLookup | undefined {
  const mine = entries.filter((e) => e.ip === ip);
  if (mine.length === 0) return undefined;

  const usable = mine.flatMap((entry) => {
    const mac = usableMac(entry);
    return mac === undefined ? [] : [{ entry, ...mac }];
  });
  const macs = [...new Set(usable.map((u) => u.mac))];
  if (macs.length > 1) {
    const seen = usable.map((u) => `${u.mac}${on(u.entry.dev)}`).join(', ');
    return fail(
      'ambiguous',
      `${ip} is in the neighbour table with ${macs.length} different MAC addresses (${seen}): more than one ` +
        'device answers for it on the links of this host, so which one is the client cannot be told',
    );
  }
  const found = usable[0];
  if (found !== undefined) {
    return {
      ok: true,
      ip,
      mac: found.mac,
      locallyAdministered: found.locallyAdministered,
      source: 'neighbour-table',
      ...(found.entry.dev === undefined ? {} : { dev: found.entry.dev }),
    };
  }

  const resolved = mine.find(isResolved);
  if (resolved !== undefined) return fail('no-mac', `${ip}${on(resolved.dev)} ${noMacWhy(resolved)}`);
  const first = mine[0] as NeighbourEntry;
  return fail(
    'no-entry',
    `${ip}${on(first.dev)} is on this host's network, but the kernel has not resolved its MAC address (neighbour ` +
      `state ${first.state}): the device did not answer this host's ARP or neighbour solicitation; it may have ` +
      'left the network or be switched off',
  );
}

/** Why there is no neighbour entry for `ip` (normaliseIp form), given the route the kernel would use to it. */
export function fromRoute(ip: string, route: Route): MacLookup {
  switch (route.kind) {
    case 'local':
      return fail(
        'local',
        `${ip} is an address of this host itself, not of a device on its network, so there is no device MAC ` +
          'address to find',
      );
    case 'via-gateway':
      return fail(
        'not-on-link',
        `${ip} is not on this host's own network (subnet/VLAN): it is reached through router ${route.gateway}` +
          `${on(route.dev)}, and its packets arrive with the router's MAC address, not its own, so its MAC ` +
          'address cannot be known here (only devices on a network this host is directly attached to can be)',
      );
    case 'no-route':
      return fail(
        'not-on-link',
        `${ip} is not on any network this host is attached to (${route.detail}), so its MAC address cannot be ` +
          'known here',
      );
    case 'on-link':
      return fail(
        'no-entry',
        `${ip} is on this host's network${on(route.dev)}, but the kernel's neighbour table has no entry for it: ` +
          'the device has not exchanged packets with this host lately',
      );
  }
}

export function lookupFailed(why: string): MacLookup {
  return fail('lookup-failed', `could not read the kernel's neighbour table: ${why}`);
}

export function invalidAddress(input: string): MacLookup {
  return fail('invalid-address', `client address ${showValue(input)} is not an IP address`);
}

function on(dev: string | undefined): string {
  return dev === undefined ? '' : ` (on ${showValue(dev, 16)})`;
}

function noMacWhy(entry: NeighbourEntry): string {
  if (entry.lladdr === undefined) {
    return `has no link-layer address in the neighbour table (state ${entry.state}): its link has no MAC addresses`;
  }
  const kind = entry.mac === undefined ? 'invalid' : classifyMac(entry.mac).kind;
  switch (kind) {
    case 'none':
      return 'has the all-zero MAC address 00:00:00:00:00:00 in the neighbour table, which names no device';
    case 'broadcast':
    case 'multicast':
      return `has the ${kind} address ${entry.mac} in the neighbour table, which no device sends from`;
    default:
      return `has link-layer address ${showValue(entry.lladdr)} in the neighbour table, which is not an Ethernet MAC address`;
  }
}
