import type { Log } from '../lib/log.ts';

/**
 * Something a helper opens on first use (the session DB, the directory settings) and opens again after a
 * failure, at most once a second, so a helper started before Doorman was set up, or one whose DB went away
 * for a moment, or one whose configuration was broken and then mended, recovers without a restart.
 * Meanwhile requests get BH: a helper that exits makes Squid give up on it, and on the whole proxy.
 */
export class Reopening<T> {
  readonly #open: () => T;
  readonly #close: (value: T) => void;
  readonly #log: Log;
  readonly #what: string;
  #value: T | undefined;
  #failedAt = -Infinity;

  constructor(what: string, open: () => T, log: Log, close: (value: T) => void = () => {}) {
    this.#what = what;
    this.#open = open;
    this.#close = close;
    this.#log = log;
  }

  get(): T | undefined {
    if (this.#value === undefined && Date.now() - this.#failedAt >= 1000) {
      try {
        this.#value = this.#open();
      } catch (error) {
        this.fail(error);
      }
    }
    return this.#value;
  }

  /** Run `action` on the value if there is one; an error drops the value, to be opened again later. */
  use(action: (value: T) => void): void {
    const value = this.get();
    if (value === undefined) return;
    try {
      action(value);
    } catch (error) {
      this.fail(error);
    }
  }

  fail(error: unknown): void {
    this.#log(`${this.#what}: ${error instanceof Error ? error.message : String(error)}`);
    const dropped = this.#value;
    this.#value = undefined;
    this.#failedAt = Date.now();
    if (dropped !== undefined) {
      try {
        this.#close(dropped);
      } catch {
        // it failed already; closing is best effort
      }
    }
  }
}
