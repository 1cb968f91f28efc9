import { createHmac, randomBytes } from 'node:crypto';
import type { Clock } from '../../lib/clock.ts';
import { deriveKey } from '../../lib/security/portal-url-signature.ts';
import { tokensMatch } from '../admin/csrf.ts';

/**
 * CSRF for anonymous visitors (nobody is signed in to the splash page): a random nonce in a cookie, and in the
 * form `<issued>.<HMAC(nonce, client address, issued)>` under a key only this Doorman knows (a signed
 * double-submit cookie). A site that plants a cookie still cannot make the matching field; a token made for
 * one address is no good from another; a token is good for `maxAgeSeconds` (an hour) from when the page was
 * made. Compared in constant time.
 *
 * The key: derived from `secret` with a label (doorman serve passes the proxy key, so open splash pages survive
 * a restart), else random per process.
 */
export const CSRF_FIELD = 'csrf';
export const CSRF_LABEL = 'doorman splash csrf v1';
export const CSRF_MAX_AGE_SECONDS = 3600;

const NONCE = /^[A-Za-z0-9_-]{43}$/;
const TOKEN = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/;
/** Clocks of one host do not run backwards by much; a token from further ahead was not made here. */
const FUTURE_SLACK_SECONDS = 60;

export class SplashCsrf {
  readonly #key: Buffer;
  readonly #clock: Clock;
  readonly #maxAgeSeconds: number;

  constructor(clock: Clock, options: { secret?: string | Uint8Array; maxAgeSeconds?: number } = {}) {
    this.#clock = clock;
    this.#maxAgeSeconds = options.maxAgeSeconds ?? CSRF_MAX_AGE_SECONDS;
    this.#key = options.secret === undefined ? randomBytes(32) : deriveKey(options.secret, CSRF_LABEL);
  }

  newNonce(): string {
    return randomBytes(32).toString('base64url');
  }

  isNonce(value: string | undefined): value is string {
    return value !== undefined && NONCE.test(value);
  }

  /** The form field for a page made now for `ip` holding cookie `nonce`. */
  tokenFor(nonce: string, ip: string): string {
    const issued = Math.floor(this.#clock.now() / 1000);
    return `${issued}.${this.#mac(nonce, ip, issued)}`;
  }

  /** Whether `token` was made by tokenFor(nonce, ip) less than maxAgeSeconds ago. */
  verify(nonce: string | undefined, ip: string, token: string): boolean {
    if (!this.isNonce(nonce)) return false;
    const m = TOKEN.exec(token);
    const issued = Number(m?.[1] ?? Number.NaN);
    const now = this.#clock.now() / 1000;
    const fresh = issued <= now + FUTURE_SLACK_SECONDS && now - issued < this.#maxAgeSeconds;
    // Compared whatever the age, so a stale token costs the same as a forged one.
    const same = tokensMatch(m?.[2] ?? '', Number.isFinite(issued) ? this.#mac(nonce, ip, issued) : '');
    return same && fresh;
  }

  #mac(nonce: string, ip: string, issued: number): string {
    return createHmac('sha256', this.#key).update(`${nonce}\n${ip}\n${issued}`, 'utf8').digest('base64url');
  }
}
