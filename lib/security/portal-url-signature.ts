import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.ts';

/**
 * The splash page follows, after a sign-in, only a URL the ICAP service handed out: the ICAP decision signs
 * the original URL it puts in `portal/?url=…` with `sig=<expires>.<HMAC-SHA256>`, and the splash page checks
 * that signature before it redirects. A link someone crafted (`portal/?url=https://evil.example/`) has no good
 * signature, so a real portal never becomes a phishing hop.
 *
 * The MAC covers the client's address, the expiry and the URL: a signature made for the attacker's own
 * device is no good from the victim's, and none is good for longer than PORTAL_URL_LIFETIME_SECONDS (long
 * enough to read a policy and type a password; after it the user lands on the portal's own "connected" page,
 * which is only a click away from where they were going). Verified in constant time.
 *
 * The key is derived from a secret Doorman holds (doorman serve and its ICAP threads: the proxy key, see
 * proxy-key.ts) with a label of its own, so it never equals the CSRF key derived from the same secret.
 */
export const PORTAL_URL_SIGNATURE_FIELD = 'sig';
export const PORTAL_URL_LABEL = 'doorman portal url v1';
/** Ten minutes. */
export const PORTAL_URL_LIFETIME_SECONDS = 600;
/** The longest URL signed or checked (the ICAP decision's MAX_ORIGINAL_URL). */
export const MAX_SIGNED_URL = 2000;
/** `<up to 12 digits>.<43 characters>`: anything longer is not a signature, and is not parsed. */
export const MAX_SIGNATURE_LENGTH = 56;

const SIGNATURE = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/;
/** Clocks of one host do not run backwards by much; an expiry further out was not made here. */
const FUTURE_SLACK_SECONDS = 60;

export type PortalUrlRefusal = 'missing' | 'malformed' | 'expired' | 'forged' | 'too-long';
export type PortalUrlCheck = { ok: true } | { ok: false; reason: PortalUrlRefusal };

/** A key for one purpose from a held secret: HMAC-SHA256(secret, label). */
export function deriveKey(secret: string | Uint8Array, label: string): Buffer {
  return createHmac('sha256', secret).update(label, 'utf8').digest();
}

export class PortalUrlSigner {
  readonly #key: Buffer;
  readonly #clock: Clock;
  readonly #lifetimeSeconds: number;

  constructor(secret: string | Uint8Array, clock: Clock, options: { lifetimeSeconds?: number } = {}) {
    this.#key = deriveKey(secret, PORTAL_URL_LABEL);
    this.#clock = clock;
    this.#lifetimeSeconds = options.lifetimeSeconds ?? PORTAL_URL_LIFETIME_SECONDS;
  }

  /** The `sig` for sending the client at `ip` back to `url` after the portal, good from now for the lifetime. */
  sign(url: string, ip: string): string {
    if (url.length > MAX_SIGNED_URL) throw new RangeError(`a URL to sign is at most ${MAX_SIGNED_URL} long`);
    const expires = Math.floor(this.#clock.now() / 1000) + this.#lifetimeSeconds;
    return `${expires}.${this.#mac(url, ip, expires).toString('base64url')}`;
  }

  /** Whether `signature` is sign(url, ip)'s, and not expired. Sizes are checked before anything is parsed. */
  verify(url: string, ip: string, signature: string | undefined): PortalUrlCheck {
    if (signature === undefined || signature === '') return { ok: false, reason: 'missing' };
    if (url.length > MAX_SIGNED_URL) return { ok: false, reason: 'too-long' };
    if (signature.length > MAX_SIGNATURE_LENGTH) return { ok: false, reason: 'malformed' };
    const m = SIGNATURE.exec(signature);
    if (m === null) return { ok: false, reason: 'malformed' };
    const expires = Number(m[1]);
    const presented = Buffer.from(m[2] as string, 'base64url');
    // Compared whatever the expiry, so a stale signature costs the same as a forged one.
    const same = presented.length === 32 && timingSafeEqual(presented, this.#mac(url, ip, expires));
    if (!same) return { ok: false, reason: 'forged' };
    const now = this.#clock.now() / 1000;
    if (expires <= now || expires > now + this.#lifetimeSeconds + FUTURE_SLACK_SECONDS)
      return { ok: false, reason: 'expired' };
    return { ok: true };
  }

  /** The URL last: the address and the expiry hold no line break, so no two inputs give the same text. */
  #mac(url: string, ip: string, expires: number): Buffer {
    return createHmac('sha256', this.#key).update(`${ip}\n${expires}\n${url}`, 'utf8').digest();
  }
}
