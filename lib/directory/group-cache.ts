import type { Clock } from '../clock.ts';

/**
 * Answers remembered for a while, keyed by string: a user's group memberships, for `groupCacheSeconds`.
 * Concurrent requests for a key that is not cached share one load (Squid sends a burst of lookups for the
 * same user as a page's requests arrive). A failed load is not remembered: the next request tries again.
 */
export interface GroupCacheOptions {
  /** Seconds a loaded value is kept; 0 = not kept (concurrent loads are still shared). */
  ttlSeconds: number;
  clock: Clock;
  /** Entries kept at most; the oldest go first. */
  maxEntries?: number;
}

export const DEFAULT_GROUP_CACHE_ENTRIES = 10_000;

export class GroupCache<V> {
  readonly #items = new Map<string, { value: V; expiresAt: number }>();
  readonly #loading = new Map<string, Promise<V>>();
  readonly #ttlMs: number;
  readonly #clock: Clock;
  readonly #max: number;

  constructor(options: GroupCacheOptions) {
    this.#ttlMs = options.ttlSeconds * 1000;
    this.#clock = options.clock;
    this.#max = options.maxEntries ?? DEFAULT_GROUP_CACHE_ENTRIES;
  }

  /** The cached value for `key`, or the one `load` gives (shared with concurrent callers, then cached). */
  get(key: string, load: () => Promise<V>): Promise<V> {
    const item = this.#items.get(key);
    if (item !== undefined) {
      if (this.#clock.now() < item.expiresAt) return Promise.resolve(item.value);
      this.#items.delete(key);
    }
    const pending = this.#loading.get(key);
    if (pending !== undefined) return pending;
    const loaded = load().then(
      (value) => {
        this.#loading.delete(key);
        if (this.#ttlMs > 0) this.#store(key, value);
        return value;
      },
      (error: unknown) => {
        this.#loading.delete(key);
        throw error;
      },
    );
    this.#loading.set(key, loaded);
    return loaded;
  }

  clear(): void {
    this.#items.clear();
  }

  get size(): number {
    return this.#items.size;
  }

  #store(key: string, value: V): void {
    this.#items.delete(key);
    this.#items.set(key, { value, expiresAt: this.#clock.now() + this.#ttlMs });
    if (this.#items.size <= this.#max) return;
    const now = this.#clock.now();
    for (const [k, item] of this.#items) if (item.expiresAt <= now) this.#items.delete(k);
    while (this.#items.size > this.#max) {
      const oldest = this.#items.keys().next();
      if (oldest.done === true) break;
      this.#items.delete(oldest.value);
    }
  }
}
