import type { Clock } from '../lib/clock.ts';
import { bh, err, ok, type HelperReply, type HelperRequest } from '../lib/helper-protocol/message.ts';
import { normaliseIp, normaliseMac } from '../lib/net/address.ts';
import type { SessionKey, SessionStore } from '../lib/store/session-store.ts';

interface Cached {
  id: number;
  username: string;
  expiresAt: number | undefined;
}

/** Cache entries kept at most; past it the cache starts over (cheap, and bounded). */
const MAX_CACHED = 200_000;

/**
 * The session lookup behind the external ACL: `%SRC %>eui` in, `OK user=NAME` or `ERR` out.
 *
 * Fields: the client IP, then optionally its MAC (`-` when Squid has none); Squid 5 also appends the acl's
 * arguments (a lone `-` when there are none), which are ignored.
 *
 * Answers come from an in-process cache that is dropped whenever another process commits to the DB
 * (PRAGMA data_version, checked once per batch of input), so a login or logout is seen by the next batch;
 * hard expiry is checked against the clock on every lookup. "Last seen" is collected here and written in one
 * transaction per flush interval, not once per lookup.
 */
export class SessionLookup {
  readonly #store: SessionStore;
  readonly #clock: Clock;
  readonly #cache = new Map<string, Cached | null>();
  readonly #seen = new Map<number, number>();
  #version = -1;

  constructor(store: SessionStore, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  /** Call before each batch of requests: forget answers another process may have changed. */
  refresh(): void {
    const version = this.#store.dataVersion();
    if (version !== this.#version || this.#cache.size > MAX_CACHED) {
      this.#cache.clear();
      this.#version = version;
    }
  }

  handle(request: HelperRequest): HelperReply {
    const [ipField, macField] = request.fields;
    if (ipField === undefined) return bh('no client address in request (format must start with %SRC)');
    const ip = normaliseIp(ipField);
    if (ip === undefined) return bh(`not an IP address: ${JSON.stringify(ipField.slice(0, 64))}`);
    const now = this.#clock.now();
    const found =
      this.#live({ kind: 'ip', value: ip }, now) ??
      (macField === undefined ? undefined : this.#byMac(macField, now));
    if (found === undefined) return err();
    this.#seen.set(found.id, now);
    return ok([['user', found.username]]);
  }

  /** Write collected "last seen" times. */
  /**
   * Write collected "last seen" times, at most `limit` of them (a transaction of 100,000 updates would hold
   * the helper and the DB's write lock for a fifth of a second; the rest waits for the next call). Returns
   * how many are still to write.
   */
  flushSeen(limit = Infinity): number {
    if (this.#seen.size === 0) return 0;
    if (this.#seen.size <= limit) {
      this.#store.touch(this.#seen);
      this.#seen.clear();
      return 0;
    }
    const chunk = new Map<number, number>();
    for (const [id, seen] of this.#seen) {
      if (chunk.size >= limit) break;
      chunk.set(id, seen);
    }
    this.#store.touch(chunk);
    for (const id of chunk.keys()) this.#seen.delete(id);
    return this.#seen.size;
  }

  #byMac(field: string, now: number): Cached | undefined {
    // "-" is Squid's "no MAC" (e.g. a client not on a directly attached network); anything else that is
    // not a MAC is an acl argument, not ours to judge.
    const mac = normaliseMac(field);
    return mac === undefined ? undefined : this.#live({ kind: 'mac', value: mac }, now);
  }

  #live(key: SessionKey, now: number): Cached | undefined {
    const cacheKey = `${key.kind}:${key.value}`;
    let entry = this.#cache.get(cacheKey);
    if (entry === undefined) {
      const session = this.#store.find(key);
      entry = session ? { id: session.id, username: session.username, expiresAt: session.expiresAt } : null;
      this.#cache.set(cacheKey, entry);
    }
    if (entry === null || (entry.expiresAt !== undefined && entry.expiresAt <= now)) return undefined;
    return entry;
  }
}
