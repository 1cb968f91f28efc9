import { createHmac, randomBytes } from 'node:crypto';
import type { Clock } from '../../lib/clock.ts';
import type { PasswordRefusal } from '../../lib/directory/password-check.ts';

/**
 * Sign-in attempts the directory refused, remembered for a short while so that the same wrong attempt (a
 * double-click, a phone's captive sheet posting again, somebody retrying the same guess) never reaches the
 * directory twice: each wrong bind counts towards an Active Directory lockout. Kept in memory, per process,
 * as an HMAC of the directory version, name and password under a random key (never the password itself), at
 * most `maxEntries` of them (the oldest go first), each for `ttlMs` (two minutes): short, so that a password
 * changed or an account unlocked meanwhile is soon tried for real.
 */
export interface FailedAttemptsOptions {
  ttlMs?: number;
  maxEntries?: number;
}

export const FAILED_ATTEMPT_TTL_MS = 120_000;
export const FAILED_ATTEMPT_ENTRIES = 10_000;

export class FailedAttempts {
  readonly #key = randomBytes(32);
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #max: number;
  /** Insertion order is expiry order (one ttl for all): the oldest is first. */
  readonly #items = new Map<string, { reason: PasswordRefusal; expiresAt: number }>();

  constructor(clock: Clock, options: FailedAttemptsOptions = {}) {
    this.#clock = clock;
    this.#ttlMs = options.ttlMs ?? FAILED_ATTEMPT_TTL_MS;
    this.#max = options.maxEntries ?? FAILED_ATTEMPT_ENTRIES;
  }

  /** Why the directory refused this very attempt lately, or undefined. */
  refusal(version: number, username: string, password: string): PasswordRefusal | undefined {
    const key = this.#fingerprint(version, username, password);
    const item = this.#items.get(key);
    if (item === undefined) return undefined;
    if (this.#clock.now() < item.expiresAt) return item.reason;
    this.#items.delete(key);
    return undefined;
  }

  remember(version: number, username: string, password: string, reason: PasswordRefusal): void {
    if (this.#ttlMs <= 0) return;
    const now = this.#clock.now();
    // Drop what has expired from the front, then make room.
    for (const [key, item] of this.#items) {
      if (item.expiresAt > now && this.#items.size < this.#max) break;
      this.#items.delete(key);
    }
    const key = this.#fingerprint(version, username, password);
    this.#items.delete(key);
    this.#items.set(key, { reason, expiresAt: now + this.#ttlMs });
  }

  get size(): number {
    return this.#items.size;
  }

  #fingerprint(version: number, username: string, password: string): string {
    // Lengths first: no two (name, password) pairs make the same text.
    return createHmac('sha256', this.#key)
      .update(`${version}\n${username.length}\n${username}\n${password}`, 'utf8')
      .digest('base64url');
  }
}
