import type { Clock } from './clock.ts';

export type Opened<T> = { ok: true; value: T } | { ok: false; reason: string };

/** What is logged when an opening fails (once per reason) and when it succeeds after failing. */
export interface OpenMessages {
  failed(reason: string): string;
  opened: string;
}

const WEB_APP_MESSAGES: OpenMessages = {
  failed: (reason) => `session DB unavailable, answering 503 until it opens: ${reason}`,
  opened: 'session DB opened: serving again',
};

/**
 * Something `doorman serve` needs and may not get at start-up (the session DB, when the service user cannot
 * reach stateDir yet): opened at once and, while that fails, tried again when a request comes, at most once
 * per `retryMs`, so a flood of requests is not a flood of attempts. On demand rather than on a timer: nothing
 * runs while nobody asks, and the first request after the operator's fix is served, not refused.
 */
export class OpenOnDemand<T> {
  readonly #open: () => T | Promise<T>;
  readonly #clock: Clock;
  readonly #retryMs: number;
  readonly #log: (line: string) => void;
  #value: T | undefined;
  #reason = '';
  #triedAt = Number.NEGATIVE_INFINITY;
  /** An attempt under way (a PostgreSQL store connects and loads first). */
  #opening: Promise<void> | undefined;

  readonly #messages: OpenMessages;

  constructor(
    open: () => T | Promise<T>,
    options: { clock: Clock; log: (line: string) => void; retryMs?: number; messages?: OpenMessages },
  ) {
    this.#open = open;
    this.#messages = options.messages ?? WEB_APP_MESSAGES;
    this.#clock = options.clock;
    this.#log = options.log;
    this.#retryMs = options.retryMs ?? 1000;
  }

  get(): Opened<T> {
    if (this.#value === undefined && this.#opening === undefined) {
      if (this.#clock.now() - this.#triedAt >= this.#retryMs) this.#attempt();
    }
    if (this.#value !== undefined) return { ok: true, value: this.#value };
    return { ok: false, reason: this.#reason === '' ? 'it is being opened' : this.#reason };
  }

  /** Try now unless open or under way, and resolve once that attempt has ended (well or not). */
  settled(): Promise<void> {
    if (this.#value === undefined && this.#opening === undefined) this.#attempt();
    return this.#opening ?? Promise.resolve();
  }

  /** A synchronous open ends here and now; one that returns a promise is under way until it settles. */
  #attempt(): void {
    this.#triedAt = this.#clock.now();
    const before = this.#reason;
    let result: T | Promise<T>;
    try {
      result = this.#open();
    } catch (error) {
      return this.#failed(error, before);
    }
    if (!(result instanceof Promise)) return this.#opened(result, before);
    this.#opening = result
      .then(
        (value) => this.#opened(value, before),
        (error: unknown) => this.#failed(error, before),
      )
      .finally(() => (this.#opening = undefined));
  }

  #opened(value: T, before: string): void {
    this.#value = value;
    if (before !== '') this.#log(this.#messages.opened);
  }

  #failed(error: unknown, before: string): void {
    this.#reason = error instanceof Error ? error.message : String(error);
    // Once per reason, not once per attempt.
    if (this.#reason !== before) {
      this.#log(this.#messages.failed(this.#reason));
    }
  }
}
