import type { Clock } from '../../lib/clock.ts';

export interface KeyFailureLimits {
  maxFailures: number;
  windowSeconds: number;
  /** Keys tracked at once; past this the one whose window started first is forgotten. */
  maxTracked?: number;
}

interface Window {
  startedAt: number;
  failures: number;
}

/**
 * Failures per key (a client address group, see addressGroup; an admin account name), in fixed windows that
 * start at a key's first failure: once a key has used up its failures, retryAfter() says how long until its
 * window ends. What a caller refuses then is its own choice (the API still checks keys, see requireApiKey; the
 * sign-in refuses before scrypt). In memory and per process. Bounded, so a flood from many addresses costs a
 * fixed amount of memory (and at worst forgets some counts).
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

  /**
   * Seconds until `key` may try again, or 0 if it may now. `pending`: attempts already being checked, counted
   * as if they had failed (so that parallel guesses cannot all be checked before the first failure counts).
   */
  retryAfter(key: string, pending = 0): number {
    const window = this.#current(key);
    if ((window?.failures ?? 0) + pending < this.#maxFailures) return 0;
    // Over only because of checks still running: they end in about a second.
    if (window === undefined) return 1;
    return Math.max(1, Math.ceil((window.startedAt + this.#windowMs - this.#clock.now()) / 1000));
  }

  recordFailure(key: string): void {
    const window = this.#current(key);
    if (window !== undefined) {
      window.failures++;
      return;
    }
    if (this.#windows.size >= this.#maxTracked) {
      const oldest = this.#windows.keys().next();
      if (!oldest.done) this.#windows.delete(oldest.value);
    }
    this.#windows.set(key, { startedAt: this.#clock.now(), failures: 1 });
  }

  /** How many keys are tracked: for tests of the bound. */
  get size(): number {
    return this.#windows.size;
  }

  #current(key: string): Window | undefined {
    const window = this.#windows.get(key);
    if (window === undefined) return undefined;
    if (this.#clock.now() < window.startedAt + this.#windowMs) return window;
    this.#windows.delete(key);
    return undefined;
  }
}
