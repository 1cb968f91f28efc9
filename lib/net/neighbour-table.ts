import { normaliseIp, normaliseMac } from './address.ts';
import { classifyMac } from './mac-class.ts';

/**
 * The kernel's neighbour table (ARP for IPv4, NDP for IPv6) as `ip -json neigh show` prints it (iproute2
 * ip/ipneigh.c, print_neigh): a JSON array of objects such as
 *
 *   {"dst":"10.91.0.2","dev":"lan0","lladdr":"3a:48:7a:63:96:26","state":["REACHABLE"]}
 *   {"dst":"fd57::99","dev":"lan0","state":["FAILED"]}
 *   {"dst":"fd57::6","dev":"lan0","lladdr":"5e:11:22:33:44:55","router":null,"state":["NOARP"]}
 *
 * `dev` is left out when the command filtered on a device; `lladdr` when the kernel holds none (INCOMPLETE,
 * FAILED, links without MACs); `state` is a list of NUD flags (one in practice), left out for NUD_NONE.
 * `ip -j neigh` covers both families, so /proc/net/arp (IPv4 only) is not read.
 */
export const NEIGHBOUR_STATES = [
  'REACHABLE',
  'STALE',
  'DELAY',
  'PROBE',
  'PERMANENT',
  'NOARP',
  'INCOMPLETE',
  'FAILED',
  'NONE',
] as const;
export type NeighbourState = (typeof NEIGHBOUR_STATES)[number];

export interface NeighbourEntry {
  /** normaliseIp form. */
  ip: string;
  /** The link-layer address as an EUI-48 (normaliseMac form); undefined when there is none, or another kind. */
  mac: string | undefined;
  /** The link-layer address as ip printed it (for messages: a tunnel's is an IP address, InfiniBand's 20 bytes). */
  lladdr: string | undefined;
  state: NeighbourState;
  /** Undefined when the listing was filtered on a device. */
  dev: string | undefined;
  /** NTF_ROUTER: the neighbour said (NDP) it is a router. */
  router: boolean;
}

export type NeighbourListing = { ok: true; entries: NeighbourEntry[] } | { ok: false; reason: string };

/** A whole table of ten thousand neighbours is about 1 MB; longer output is refused, not cut. */
export const MAX_NEIGHBOUR_OUTPUT = 1024 * 1024;

/**
 * Read `ip -json neigh show` output. Entries whose `dst` is not an IP address are left out (a later iproute2
 * may list other kinds); output that is not a JSON array of objects, or longer than `maxLength`, is refused.
 */
export function parseNeighbours(output: string, maxLength = MAX_NEIGHBOUR_OUTPUT): NeighbourListing {
  if (output.length > maxLength) {
    return {
      ok: false,
      reason: `neighbour listing is ${output.length} characters, over the ${maxLength} cap`,
    };
  }
  let json: unknown;
  try {
    json = JSON.parse(output);
  } catch {
    return { ok: false, reason: 'neighbour listing is not JSON (is this "ip -json neigh show" output?)' };
  }
  if (!Array.isArray(json)) return { ok: false, reason: 'neighbour listing is not a JSON array' };
  const entries: NeighbourEntry[] = [];
  for (const item of json as unknown[]) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      return { ok: false, reason: 'neighbour listing has an element that is not an object' };
    }
    const record = item as Record<string, unknown>;
    const ip = typeof record.dst === 'string' ? normaliseIp(record.dst) : undefined;
    if (ip === undefined) continue;
    const lladdr = typeof record.lladdr === 'string' ? record.lladdr : undefined;
    entries.push({
      ip,
      mac: lladdr === undefined ? undefined : normaliseMac(lladdr),
      lladdr,
      state: stateOf(record.state),
      dev: typeof record.dev === 'string' ? record.dev : undefined,
      router: 'router' in record,
    });
  }
  return { ok: true, entries };
}

/**
 * One state from the flag list. FAILED and INCOMPLETE win over anything listed with them (the address is not
 * known); otherwise the first flag ip knows; NONE when there is none (flags ip prints in hex are not states).
 */
function stateOf(value: unknown): NeighbourState {
  if (!Array.isArray(value)) return 'NONE';
  const flags = (value as unknown[]).filter((f): f is string => typeof f === 'string');
  if (flags.includes('FAILED')) return 'FAILED';
  if (flags.includes('INCOMPLETE')) return 'INCOMPLETE';
  for (const flag of flags) {
    const state = NEIGHBOUR_STATES.find((s) => s === flag);
    if (state !== undefined) return state;
  }
  return 'NONE';
}

/**
 * States in which the entry holds the link-layer address the neighbour last answered with (or one an
 * administrator set). STALE is only "not confirmed lately": the lab saw clients in STALE, REACHABLE and DELAY.
 */
const RESOLVED_STATES: ReadonlySet<NeighbourState> = new Set([
  'REACHABLE',
  'STALE',
  'DELAY',
  'PROBE',
  'PERMANENT',
  'NOARP',
]);

/** Whether the kernel has resolved this entry's address (not INCOMPLETE, FAILED or NONE). */
export function isResolved(entry: NeighbourEntry): boolean {
  return RESOLVED_STATES.has(entry.state);
}

/**
 * The device MAC an entry gives, or undefined when it gives none: not resolved, no link-layer address, one that
 * is not an EUI-48, all zeros, or a group (multicast, broadcast) address.
 */
export function usableMac(entry: NeighbourEntry): { mac: string; locallyAdministered: boolean } | undefined {
  if (!isResolved(entry) || entry.mac === undefined) return undefined;
  const mac = classifyMac(entry.mac);
  return mac.kind === 'unicast' ? { mac: mac.mac, locallyAdministered: mac.locallyAdministered } : undefined;
}
