import type { Clock } from '../clock.ts';
import type { MacLookup } from './mac-lookup.ts';

/**
 * Neighbour-table answers remembered per client IP for a few seconds. A page's requests arrive in a burst, each
 * one possibly a lookup (one `ip` process, or two when the route must explain a miss); concurrent lookups for an
 * IP share one, and an answer is reused until it expires. Kept short because an address can change hands (DHCP,
 * a device leaving and another arriving), and a device that just appeared must not stay "no-entry" for long.
 * `lookup-failed` answers are not remembered: the next request tries again.
 */
export interface MacLookupCacheOptions {
  clock: Clock;
  /** How long an answer is reused; default 2 s. */
  ttlMs?: number;
  /** Addresses kept at most; the oldest go first. */
  maxEntries?: number;
}

export const DEFAULT_MAC_LOOKUP_TTL_MS = 2000;
export const DEFAULT_MAC_LOOKUP_ENTRIES = 4096;

export class MacLookupCache {
  readonly #items = new Map<string, { answer: MacLookup; expiresAt: number }>();
  readonly #loading = new Map<string, Promise<MacLookup>>();
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #max: number;

  constructor(options: MacLookupCacheOptions) {
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs ?? DEFAULT_MAC_LOOKUP_TTL_MS;
    this.#max = options.maxEntries ?? DEFAULT_MAC_LOOKUP_ENTRIES;
  }

  /** The remembered answer for `ip`, or the one `load` gives (shared with concurrent callers). */
  get(ip: string, load: () => Promise<MacLookup>): Promise<MacLookup> {
    const item = this.#items.get(ip);
    if (item !== undefined) {
      if (this.#clock.now() < item.expiresAt) return Promise.resolve(item.answer);
      this.#items.delete(ip);
    }
    const pending = this.#loading.get(ip);
    if (pending !== undefined) return pending;
    const loaded = load().then(
      (answer) => {
        this.#loading.delete(ip);
        if (answer.ok || answer.reason !== 'lookup-failed') this.#store(ip, answer);
        return answer;
      },
      (error: unknown) => {
        this.#loading.delete(ip);
        throw error;
      },
    );
    this.#loading.set(ip, loaded);
    return loaded;
  }

  get size(): number {
    return this.#items.size;
  }

  #store(ip: string, answer: MacLookup): void {
    if (this.#ttlMs <= 0) return;
    this.#items.delete(ip);
    this.#items.set(ip, { answer, expiresAt: this.#clock.now() + this.#ttlMs });
    while (this.#items.size > this.#max) {
      const oldest = this.#items.keys().next();
      if (oldest.done === true) break;
      this.#items.delete(oldest.value);
    }
  }
}
