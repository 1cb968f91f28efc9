import type { ManualClock } from '../../lib/clock.ts';
import type { Schedule } from '../../lib/store/busy.ts';

/**
 * Timers that fire only when told, on a ManualClock: for code that waits on `Schedule` (lib/store/busy.ts),
 * so retries and deadlines are tested without sleeping.
 */
export class ManualTimers {
  readonly #clock: ManualClock;
  #tasks: Array<{ at: number; task: () => void }> = [];

  constructor(clock: ManualClock) {
    this.#clock = clock;
  }

  readonly schedule: Schedule = (task, ms) => {
    this.#tasks.push({ at: this.#clock.now() + ms, task });
  };

  /** How many timers are waiting. */
  get pending(): number {
    return this.#tasks.length;
  }

  /** Until the code under test (which may first await work off the event loop) has set a timer. */
  async untilWaiting(): Promise<void> {
    while (this.#tasks.length === 0) await settle();
  }

  /**
   * Move the clock to the earliest timer, run it, and let the promises it settles run their callbacks.
   * False if there was none.
   */
  async fireNext(): Promise<boolean> {
    this.#tasks.sort((a, b) => a.at - b.at);
    const next = this.#tasks.shift();
    if (next === undefined) return false;
    if (next.at > this.#clock.now()) this.#clock.set(next.at);
    next.task();
    await settle();
    return true;
  }

  /** Fire timers until `done()` or the clock passes `untilMs` (then false) or none is left. */
  async fireUntil(done: () => boolean, untilMs: number): Promise<boolean> {
    while (!done()) {
      if (this.#clock.now() > untilMs || !(await this.fireNext())) return done();
    }
    return true;
  }
}

/** Let pending promise callbacks and setImmediate callbacks run. */
export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
