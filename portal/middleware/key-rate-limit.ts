import type { Middleware } from 'koa';
import type { Clock } from '../../lib/clock.ts';
import { ApiError } from '../errors.ts';
import { clientIpOf, type PortalState } from '../state.ts';

export interface KeyFailureLimits {
  maxFailures: number;
  windowSeconds: number;
  /** Addresses tracked at once; past this the one whose window started first is forgotten. */
  maxTracked?: number;
}

interface Window {
  startedAt: number;
  failures: number;
}

/**
 * Wrong API keys per client address, in fixed windows that start at an address's first failure: once an address
 * has used up its failures it is refused until its window ends. In memory and per process: it slows a guesser
 * down, and a 256-bit secret is not going to be guessed anyway. Bounded, so a flood from many addresses costs
 * a fixed amount of memory (and at worst forgets some counts).
 */
export class KeyFailureLimiter {
  readonly #clock: Clock;
  readonly #maxFailures: number;
  readonly #windowMs: number;
  readonly #maxTracked: number;
  /** Insertion order is window start order: a window is re-inserted when it starts again. */
  readonly #windows = new Map<string, Window>();

  constructor(clock: Clock, limits: KeyFailureLimits) {
    this.#clock = clock;
    this.#maxFailures = limits.maxFailures;
    this.#windowMs = limits.windowSeconds * 1000;
    this.#maxTracked = limits.maxTracked ?? 10_000;
  }

  /** Seconds until `ip` may try again, or 0 if it may now. */
  retryAfter(ip: string): number {
    const window = this.#current(ip);
    if (window === undefined || window.failures < this.#maxFailures) return 0;
    return Math.max(1, Math.ceil((window.startedAt + this.#windowMs - this.#clock.now()) / 1000));
  }

  recordFailure(ip: string): void {
    const window = this.#current(ip);
    if (window !== undefined) {
      window.failures++;
      return;
    }
    if (this.#windows.size >= this.#maxTracked) {
      const oldest = this.#windows.keys().next();
      if (!oldest.done) this.#windows.delete(oldest.value);
    }
    this.#windows.set(ip, { startedAt: this.#clock.now(), failures: 1 });
  }

  /** How many addresses are tracked: for tests of the bound. */
  get size(): number {
    return this.#windows.size;
  }

  #current(ip: string): Window | undefined {
    const window = this.#windows.get(ip);
    if (window === undefined) return undefined;
    if (this.#clock.now() < window.startedAt + this.#windowMs) return window;
    this.#windows.delete(ip);
    return undefined;
  }
}

/** Refuse an address that has used up its failures before looking at its key, or even reading its body. */
export function keyRateLimit(limiter: KeyFailureLimiter): Middleware<PortalState> {
  return async function limitKeyFailures(ctx, next) {
    const seconds = limiter.retryAfter(clientIpOf(ctx));
    if (seconds > 0) {
      throw new ApiError(
        'too_many_requests',
        `too many wrong API keys from this address; retry in ${seconds}s`,
        {
          headers: { 'Retry-After': String(seconds) },
        },
      );
    }
    await next();
  };
}
