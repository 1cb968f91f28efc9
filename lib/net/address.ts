import { isIPv4, isIPv6 } from 'node:net';

/**
 * One spelling per address, so that the session key written by the portal is the key Squid's %SRC looks up.
 * IPv4 stays dotted-quad; IPv6 is RFC 5952 form (lower case, longest zero run compressed); an IPv4-mapped IPv6
 * address (`::ffff:10.0.0.5`) is the IPv4 address it maps. Zone IDs (`fe80::1%eth0`) are not session keys.
 * Returns undefined for anything that is not an address.
 */
export function normaliseIp(input: string): string | undefined {
  if (input.length === 0 || input.length > 45) return undefined;
  // node:net accepts IPv4 only as plain dotted decimal without leading zeros: already canonical.
  if (isIPv4(input)) return input;
  if (!isIPv6(input) || input.includes('%')) return undefined;
  const groups = expandIPv6(input);
  if (groups === undefined) return undefined;
  // ::ffff:a.b.c.d (IPv4-mapped) is the IPv4 client seen through a dual-stack socket.
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    const hi = groups[6] ?? 0;
    const lo = groups[7] ?? 0;
    return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  }
  return compressIPv6(groups);
}

/**
 * What a failure counter or a connection cap counts as one client: an IPv4 address itself, and for IPv6 its
 * /64 (`2001:db8:1:2::/64`). One IPv6 host usually has a whole /64 to itself (SLAAC, privacy addresses) and can
 * take a fresh address for every request, so counting single IPv6 addresses would count nothing.
 * Takes any spelling; something that is not an address is returned as it is.
 */
export function addressGroup(input: string): string {
  const ip = normaliseIp(input);
  if (ip === undefined || !ip.includes(':')) return ip ?? input;
  const groups = expandIPv6(ip);
  if (groups === undefined) return ip;
  return `${compressIPv6([...groups.slice(0, 4), 0, 0, 0, 0])}/64`;
}

/** Eight 16-bit groups of an address node:net has already accepted as IPv6. */
export function expandIPv6(input: string): number[] | undefined {
  let text = input.toLowerCase();
  // A dotted IPv4 tail (::ffff:10.0.0.5) becomes two hex groups, so only one grammar remains.
  const dotted = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const parse = (s: string): number[] => (s === '' ? [] : s.split(':').map((h) => parseInt(h, 16)));
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const head = parse(halves[0] ?? '');
  const rest = parse(halves[1] ?? '');
  const fill = halves.length === 2 ? 8 - head.length - rest.length : 0;
  const groups = [...head, ...new Array<number>(Math.max(fill, 0)).fill(0), ...rest];
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : undefined;
}

function compressIPv6(groups: number[]): string {
  // RFC 5952 §4.2: compress the longest run of two or more zero groups, the first one on a tie.
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/**
 * MAC (EUI-48) in Squid's %>eui spelling: lower-case hex pairs joined by ':'. Accepts ':' or '-' separators.
 * Spelling only: `00:00:00:00:00:00` (Squid's "no MAC" for a routed client) and group addresses pass too;
 * classifyMac (mac-class.ts) says whether it names a device. An 8-byte EUI-64 (Squid's %>eui for an IPv6
 * client) is refused: it is not a MAC.
 */
export function normaliseMac(input: string): string | undefined {
  if (!/^[0-9a-fA-F]{2}([:-])(?:[0-9a-fA-F]{2}\1){4}[0-9a-fA-F]{2}$/.test(input)) return undefined;
  return input.toLowerCase().replaceAll('-', ':');
}
