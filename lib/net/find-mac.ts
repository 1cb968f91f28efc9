import { systemClock } from '../clock.ts';
import { normaliseIp } from './address.ts';
import { cappedIp, execIp, firstLine, type IpResult, type IpRunner } from './ip-runner.ts';
import type { MacLookupCache } from './mac-lookup-cache.ts';
import {
  fromNeighbours,
  fromRoute,
  fromSquidEui,
  invalidAddress,
  lookupFailed,
  type MacLookup,
} from './mac-lookup.ts';
import { NeighbourReader } from './neighbour-reader.ts';
import { parseRouteGet } from './route-get.ts';

export interface FindMacOptions {
  /**
   * Squid's %>eui for the client, if the caller has it: used when it is a real MAC of an IPv4 client, so no
   * process is started; otherwise (`-`, all zeros, any IPv6 client) the neighbour table is read.
   */
  squidEui?: string;
  /**
   * Runs `ip route get` for an address the table has no entry for (to say why: routed, local, on-link but
   * quiet). Default: the process-wide capped runner.
   */
  run?: IpRunner;
  /** The neighbour table. Default: one reader for the whole process, so every caller shares its readings. */
  neighbours?: NeighbourReader;
  /** Answers shared between lookups for a few seconds; none by default. */
  cache?: MacLookupCache;
}

/**
 * One of each for the whole process (the splash pages and the ICAP decision alike). The table reading is
 * shared by every lookup (at most one `ip` per family in flight), so it needs no cap of its own; the route
 * asked for each address the table lacks is capped (DEFAULT_IP_CAP), apart, so that misses queued there never
 * hold up the table.
 */
const defaultRunner = cappedIp(execIp());
const defaultNeighbours = new NeighbourReader({ clock: systemClock, run: execIp() });

/**
 * The MAC address of the client at `ip`, from the kernel's neighbour table of the namespace this process runs
 * in (Squid's, for a helper: the table of the host that received the client's packets). Never rejects: every
 * failure is an answer with a reason and a message that says why (see MacLookup).
 */
export async function findMac(ip: string, options: FindMacOptions = {}): Promise<MacLookup> {
  const address = normaliseIp(ip);
  if (address === undefined) return invalidAddress(ip);
  const fromSquid = fromSquidEui(address, options.squidEui);
  if (fromSquid !== undefined) return fromSquid;
  const run = options.run ?? defaultRunner;
  const neighbours = options.neighbours ?? defaultNeighbours;
  if (options.cache === undefined) return fromTable(address, neighbours, run);
  return options.cache.get(address, () => fromTable(address, neighbours, run));
}

/** `address` is in normaliseIp form, so it is a plain address, never an option or a prefix to `ip`. */
async function fromTable(address: string, neighbours: NeighbourReader, run: IpRunner): Promise<MacLookup> {
  const listing = await neighbours.listing(address);
  if (!listing.ok) return lookupFailed(listing.reason);
  const found = fromNeighbours(address, listing.entries);
  if (found !== undefined) return found;

  // No entry at all: the route tells a device that is not on a link of ours from one that is but kept quiet.
  const route = await runIp(run, ['-json', 'route', 'get', address]);
  if (typeof route === 'string') return lookupFailed(route);
  if (route.code !== 0) {
    // "RTNETLINK answers: Network is unreachable" (or No route to host, Invalid argument for a group address)
    return fromRoute(address, {
      kind: 'no-route',
      detail: firstLine(route.stderr) || `ip exited with ${route.code}`,
    });
  }
  const parsed = parseRouteGet(route.stdout);
  if (!parsed.ok) return lookupFailed(parsed.reason);
  return fromRoute(address, parsed.route);
}

/** The result, or the reason it could not run, as a string. A runner that throws is not trusted to reject. */
async function runIp(run: IpRunner, args: readonly string[]): Promise<IpResult | string> {
  try {
    return await run(args);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}
