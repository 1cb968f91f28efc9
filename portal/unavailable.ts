import type Koa from 'koa';
import type { Clock } from '../lib/clock.ts';
import { ApiError } from './errors.ts';
import { appShell } from './shell.ts';
import type { PortalState } from './state.ts';

export type Opened<T> = { ok: true; value: T } | { ok: false; reason: string };

/**
 * Something `doorman serve` needs and may not get at start-up (the session DB, when the service user cannot
 * reach stateDir yet): opened at once and, while that fails, tried again when a request comes, at most once
 * per `retryMs`, so a flood of requests is not a flood of attempts. On demand rather than on a timer: nothing
 * runs while nobody asks, and the first request after the operator's fix is served, not refused.
 */
export class OpenOnDemand<T> {
  readonly #open: () => T;
  readonly #clock: Clock;
  readonly #retryMs: number;
  readonly #log: (line: string) => void;
  #value: T | undefined;
  #reason = '';
  #triedAt = Number.NEGATIVE_INFINITY;

  constructor(open: () => T, options: { clock: Clock; log: (line: string) => void; retryMs?: number }) {
    this.#open = open;
    this.#clock = options.clock;
    this.#log = options.log;
    this.#retryMs = options.retryMs ?? 1000;
  }

  get(): Opened<T> {
    if (this.#value !== undefined) return { ok: true, value: this.#value };
    if (this.#clock.now() - this.#triedAt >= this.#retryMs) this.#try();
    return this.#value === undefined ? { ok: false, reason: this.#reason } : { ok: true, value: this.#value };
  }

  #try(): void {
    this.#triedAt = this.#clock.now();
    const before = this.#reason;
    try {
      this.#value = this.#open();
    } catch (error) {
      this.#reason = error instanceof Error ? error.message : String(error);
      // Once per reason, not once per attempt.
      if (this.#reason !== before) {
        this.#log(`session DB unavailable, answering 503 until it opens: ${this.#reason}`);
      }
      return;
    }
    if (before !== '') this.#log('session DB opened: serving again');
  }
}

/**
 * The web app while the session DB cannot be opened: every request gets a JSON 503 (`service_unavailable`) that
 * says why (the operator's to fix: no secret in it) and Retry-After, logged like any other request.
 */
export function unavailableApp(reason: () => string, log: (line: string) => void): Koa<PortalState> {
  const app = appShell(log);
  app.use(() => {
    throw new ApiError('service_unavailable', `the session DB cannot be opened: ${reason()}`, {
      headers: { 'Retry-After': '1' },
    });
  });
  return app;
}
