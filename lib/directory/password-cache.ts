import { createHmac, createSecretKey, randomBytes, timingSafeEqual } from 'node:crypto';
import { dnKey } from './dn.ts';
import type { Clock } from '../clock.ts';

/**
 * Successful password checks, remembered for a short time so a burst of Basic authentications does not
 * bind for every request. What is kept is never the password: an HMAC-SHA-256 under a key made at random
 * when the cache is made (so per process, never stored), over a random per-entry salt, the user's DN, the
 * freshness token and the password. A memory dump gives nothing to test guesses against offline without
 * the key, and two users with one password do not share a digest.
 *
 * An entry is good only for the same freshness token (see users.ts): the caller searches the user on every
 * check and passes the token it got, so a changed password, a disabled, locked or expired account changes
 * the token and sends the check to the directory. A user whose directory shows no token is never cached.
 * Failures are never cached: a wrong password always goes to the directory (which keeps the lockout count).
 */
export interface PasswordCacheOptions {
  /** Seconds an entry is good for; 0 turns the cache off. */
  ttlSeconds: number;
  clock: Clock;
  /** Entries kept at most; the oldest go first. */
  maxEntries?: number;
}

interface Item {
  freshness: string;
  salt: Buffer;
  digest: Buffer;
  expiresAt: number;
}

export const DEFAULT_PASSWORD_CACHE_ENTRIES = 10_000;

export class PasswordCache {
  // A KeyObject, made once: handing createHmac raw bytes imports the key again on every call.
  readonly #key = createSecretKey(randomBytes(32));
  readonly #items = new Map<string, Item>();
  readonly #keys = new Map<string, string>();
  readonly #ttlMs: number;
  readonly #clock: Clock;
  readonly #max: number;

  constructor(options: PasswordCacheOptions) {
    this.#ttlMs = options.ttlSeconds * 1000;
    this.#clock = options.clock;
    this.#max = options.maxEntries ?? DEFAULT_PASSWORD_CACHE_ENTRIES;
  }

  /** True when this password was verified for this user, at this freshness, within the TTL. */
  matches(userDn: string, freshness: string | undefined, password: string): boolean {
    if (freshness === undefined || this.#ttlMs <= 0) return false;
    const key = this.#keyOf(userDn);
    const item = this.#items.get(key);
    if (item === undefined) return false;
    if (item.freshness !== freshness || this.#clock.now() >= item.expiresAt) {
      // The account changed (or the entry is old): it can never match again.
      this.#items.delete(key);
      return false;
    }
    return timingSafeEqual(this.#digest(item.salt, key, freshness, password), item.digest);
  }

  /** Remember a password the directory just accepted for this user at this freshness. */
  remember(userDn: string, freshness: string | undefined, password: string): void {
    if (freshness === undefined || this.#ttlMs <= 0) return;
    const key = this.#keyOf(userDn);
    const salt = randomBytes(16);
    this.#items.delete(key); // re-inserted last: the Map's order is oldest first
    this.#items.set(key, {
      freshness,
      salt,
      digest: this.#digest(salt, key, freshness, password),
      expiresAt: this.#clock.now() + this.#ttlMs,
    });
    if (this.#items.size > this.#max) this.#evict();
  }

  get size(): number {
    return this.#items.size;
  }

  /** dnKey, remembered: parsing the DN on every check is a tenth of a Basic helper's CPU time. */
  #keyOf(dn: string): string {
    let key = this.#keys.get(dn);
    if (key === undefined) {
      if (this.#keys.size >= this.#max) this.#keys.clear();
      key = dnKey(dn);
      this.#keys.set(dn, key);
    }
    return key;
  }

  #digest(salt: Buffer, key: string, freshness: string, password: string): Buffer {
    return createHmac('sha256', this.#key)
      .update(salt)
      .update(`${key}\0${freshness}\0`)
      .update(password, 'utf8')
      .digest();
  }

  #evict(): void {
    const now = this.#clock.now();
    for (const [key, item] of this.#items) if (item.expiresAt <= now) this.#items.delete(key);
    while (this.#items.size > this.#max) {
      const oldest = this.#items.keys().next();
      if (oldest.done === true) break;
      this.#items.delete(oldest.value);
    }
  }
}
