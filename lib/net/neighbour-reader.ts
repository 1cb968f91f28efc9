import { open } from 'node:fs/promises';
import type { Clock } from '../clock.ts';
import { exitWhy, type IpRunner } from './ip-runner.ts';
import {
  MAX_NEIGHBOUR_OUTPUT,
  parseNeighbours,
  usableMac,
  type NeighbourListing,
} from './neighbour-table.ts';
import { MAX_PROC_ARP, parseProcArp } from './proc-arp.ts';

/**
 * The kernel's neighbour table, read without a process per address: IPv4 from /proc/net/arp (a file), IPv6
 * from one `ip -json -6 neigh show` of the whole table. Each family has at most one read in flight, shared by
 * every lookup that asks meanwhile, and its answer is reused for `ttlMs` by the lookups it answers; so a
 * burst of requests from many addresses (a client drawing a fresh IPv6 address for each) costs one read, not
 * one process each. A failed read is not reused: the next lookup reads again.
 */
export interface NeighbourReaderOptions {
  clock: Clock;
  /** Runs `ip` for the IPv6 table (see ip-runner.ts). */
  run: IpRunner;
  /** The text of /proc/net/arp, at most `maxBytes` (plus one, so that a longer file is seen). */
  readArp?: (maxBytes: number) => Promise<string>;
  /** How long a reading is reused; default 1 s. A device that just appeared waits at most this long. */
  ttlMs?: number;
}

type Family = 4 | 6;

interface Reading {
  listing: Promise<NeighbourListing>;
  /** Undefined while in flight. */
  done: { at: number; usable: ReadonlySet<string> } | undefined;
}

export const DEFAULT_NEIGHBOUR_TTL_MS = 1000;
const PROC_ARP = '/proc/net/arp';

export class NeighbourReader {
  readonly #options: NeighbourReaderOptions;
  readonly #readings = new Map<Family, Reading>();

  constructor(options: NeighbourReaderOptions) {
    this.#options = options;
  }

  /**
   * The table's entries of `address`'s family (normaliseIp form). A finished reading younger than ttlMs is
   * reused only when it gives a device MAC for `address` (usableMac): a device that has just appeared (or taken a new address)
   * must not be missed because the table was read a moment before its first packet. A miss joins the reading
   * in flight or starts the next one, so readings still run one at a time per family.
   * Never rejects: a failure is `{ok: false, reason}`.
   */
  listing(address: string): Promise<NeighbourListing> {
    const family: Family = address.includes(':') ? 6 : 4;
    const reading = this.#readings.get(family);
    if (reading !== undefined) {
      if (reading.done === undefined) return reading.listing;
      const ttl = this.#options.ttlMs ?? DEFAULT_NEIGHBOUR_TTL_MS;
      const fresh = this.#options.clock.now() - reading.done.at < ttl;
      if (fresh && reading.done.usable.has(address)) return reading.listing;
    }
    const entry: Reading = {
      listing: this.#read(family).then((listing) => {
        if (listing.ok) {
          const usable = new Set(listing.entries.flatMap((e) => (usableMac(e) === undefined ? [] : [e.ip])));
          entry.done = { at: this.#options.clock.now(), usable };
        } else if (this.#readings.get(family) === entry) this.#readings.delete(family);
        return listing;
      }),
      done: undefined,
    };
    this.#readings.set(family, entry);
    return entry.listing;
  }

  async #read(family: Family): Promise<NeighbourListing> {
    try {
      if (family === 4) return parseProcArp(await (this.#options.readArp ?? readProcArp)(MAX_PROC_ARP));
      const result = await this.#options.run(['-json', '-6', 'neigh', 'show']);
      if (result.code !== 0) return { ok: false, reason: exitWhy('ip neigh show', result) };
      return parseNeighbours(result.stdout, MAX_NEIGHBOUR_OUTPUT);
    } catch (error) {
      return { ok: false, reason: error instanceof Error ? error.message : String(error) };
    }
  }
}

/** /proc/net/arp, at most `maxBytes` + 1 bytes: a /proc file has no size to check first. */
export async function readProcArp(maxBytes: number, path = PROC_ARP): Promise<string> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await file.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    return buffer.toString('latin1', 0, length);
  } finally {
    await file.close();
  }
}
