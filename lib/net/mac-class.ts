import { normaliseMac } from './address.ts';

/**
 * What a MAC address (EUI-48) says about the device behind it, from its first octet (IEEE 802-2014 §8.2.2):
 * bit 0 is I/G (1 = a group: multicast, or broadcast when every bit is set), bit 1 is U/L (1 = locally
 * administered: not from the maker's OUI block).
 *
 * - `none`: all zeros. Squid's %>eui is `00:00:00:00:00:00` when it has no MAC (a routed client, behind a
 *   router), never `-`; some neighbour entries carry it too. It names no device.
 * - `broadcast`, `multicast`: a group address. No device sends from one; the neighbour table holds them for
 *   multicast IPv6 destinations (33:33:…), never for a client.
 * - `unicast`: a device. `locallyAdministered` is set for the randomised ("private", "random hardware") MACs
 *   that phones and laptops use by default, often one per network and re-drawn from time to time, so a
 *   registration of that MAC ends when the device draws another: the splash page tells the user so. Virtual
 *   machines and containers have locally administered MACs too.
 * - `invalid`: not an EUI-48 in ':' or '-' spelling (an EUI-64, Squid's `-`, anything else).
 */
export type MacClass =
  | { kind: 'unicast'; mac: string; locallyAdministered: boolean }
  | { kind: 'none' }
  | { kind: 'broadcast' }
  | { kind: 'multicast' }
  | { kind: 'invalid' };

const IG_BIT = 0x01;
const UL_BIT = 0x02;

export function classifyMac(input: string): MacClass {
  const mac = normaliseMac(input);
  if (mac === undefined) return { kind: 'invalid' };
  if (mac === '00:00:00:00:00:00') return { kind: 'none' };
  if (mac === 'ff:ff:ff:ff:ff:ff') return { kind: 'broadcast' };
  const first = parseInt(mac.slice(0, 2), 16);
  if ((first & IG_BIT) !== 0) return { kind: 'multicast' };
  return { kind: 'unicast', mac, locallyAdministered: (first & UL_BIT) !== 0 };
}
