import { DoormanError } from '../../errors.ts';
import type { Sql, Tx } from './connect.ts';
import type { SessionRow } from './session-table.ts';

/** What one write did to the sessions, for this process's copy (applied at once, see SessionTable). */
export interface Effect<T> {
  value: T;
  /** Rows as written (RETURNING *). */
  rows?: readonly SessionRow[];
  /** Ids of sessions it deleted. */
  deleted?: readonly number[];
}

/** One write: runs inside the batch's transaction, after `begin` (which took the change number). */
export type Write<C, T> = (tx: Tx, context: C) => Promise<Effect<T>>;

interface Pending<C> {
  write: Write<C, unknown>;
  /** What this write needs taken before the batch's change number (see WriteBatchOptions.begin). */
  needs: string | undefined;
  /** When it was asked for (ms): it is refused once it has waited the deadline. */
  since: number;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export interface WriteBatchOptions<C> {
  sql: Sql;
  /** First in every transaction: takes the change number and any lock the batch needs. */
  begin: (tx: Tx, needs: ReadonlySet<string>) => Promise<C>;
  /** After commit: what the writes did, to apply to this process's copy. */
  committed: (context: C, effects: readonly Effect<unknown>[]) => void;
  /** A write not committed by then fails with STORE_UNAVAILABLE (the web app's 503), ms. */
  deadlineMs?: number;
  /** Writes per transaction at most; the rest go in the next. */
  maxWrites?: number;
}

/** An error of PostgreSQL about the statement itself (a constraint, a bad value): the write's own fault. */
const isStatementError = (error: unknown): boolean =>
  error instanceof Error &&
  error.name === 'PostgresError' &&
  !/^(?:08|57P|53)/.test(String((error as { code?: unknown }).code));

/**
 * Group commit for PostgreSQL: the writes asked for while the previous transaction runs share one transaction and one
 * change number (one NOTIFY), which is what makes tens of thousands of logins a second possible: notifying
 * commits serialise on a global lock in PostgreSQL, so their number must stay small (issue 15's figures). Writes
 * run in the order asked. When a write fails on its own account (a constraint), the batch is rolled back and each
 * write runs again alone, so only that one fails. When PostgreSQL cannot be reached, or does not commit within
 * the deadline, they all fail with STORE_UNAVAILABLE: nobody is told "done" for a write no other box can see.
 */
export class WriteBatch<C> {
  readonly #options: WriteBatchOptions<C>;
  #queue: Pending<C>[] = [];
  /** A flush is due at the next turn. */
  #scheduled = false;
  /** The transaction under way: writes asked for meanwhile wait for it and go in the next, together. */
  #committing: Promise<void> | undefined;

  constructor(options: WriteBatchOptions<C>) {
    this.#options = options;
  }

  /** `needs`: a lock the write needs taken first (begin gets them all, one batch's writes together). */
  run<T>(write: Write<C, T>, needs?: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({
        write,
        needs,
        since: Date.now(),
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      this.#schedule();
    });
  }

  /** Resolves once every write asked for so far has been answered. */
  async drain(): Promise<void> {
    while (this.#queue.length > 0 || this.#scheduled || this.#committing !== undefined) {
      await (this.#committing ?? new Promise((resolve) => setImmediate(resolve)));
    }
  }

  /**
   * One transaction at a time: the next starts when the one under way has ended, with every write asked for
   * meanwhile (each web request arrives in a turn of its own; waiting for the commit, not for the turn, is
   * what puts hundreds of logins in one transaction under load, and costs one login alone nothing).
   */
  #schedule(): void {
    if (this.#scheduled || this.#committing !== undefined) return;
    this.#scheduled = true;
    setImmediate(() => this.#flush());
  }

  #flush(): void {
    this.#scheduled = false;
    const deadlineMs = this.#options.deadlineMs ?? 5000;
    const now = Date.now();
    // Writes that waited their whole deadline behind a transaction that would not end are refused now.
    const expired = this.#queue.filter((item) => now - item.since >= deadlineMs);
    if (expired.length > 0) {
      this.#queue = this.#queue.filter((item) => now - item.since < deadlineMs);
      const error = new DoormanError(
        'STORE_UNAVAILABLE',
        `PostgreSQL did not commit within ${deadlineMs} ms`,
      );
      for (const item of expired) item.reject(error);
    }
    const batch = this.#queue.splice(0, this.#options.maxWrites ?? 5000);
    if (batch.length === 0) return;
    this.#committing = this.#commit(batch)
      .catch(async (error: unknown) => {
        if (!isStatementError(error) || batch.length === 1) {
          for (const item of batch) item.reject(unavailable(error));
          return;
        }
        // Someone's write failed on its own account: each alone, in order, so only that one fails.
        for (const item of batch)
          await this.#commit([item]).catch((e: unknown) => item.reject(unavailable(e)));
      })
      .finally(() => {
        this.#committing = undefined;
        if (this.#queue.length > 0) this.#schedule();
      });
  }

  async #commit(batch: readonly Pending<C>[]): Promise<void> {
    const { sql, begin, committed } = this.#options;
    let timer: NodeJS.Timeout | undefined;
    const deadlineMs = this.#options.deadlineMs ?? 5000;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new DoormanError('STORE_UNAVAILABLE', `PostgreSQL did not commit within ${deadlineMs} ms`)),
        deadlineMs,
      );
    });
    try {
      const { context, effects } = await Promise.race([
        sql.begin(async (tx) => {
          const needs = new Set(batch.flatMap((item) => (item.needs === undefined ? [] : [item.needs])));
          const context = await begin(tx, needs);
          const effects: Effect<unknown>[] = [];
          for (const item of batch) effects.push(await item.write(tx, context));
          return { context, effects };
        }),
        deadline,
      ]);
      committed(context, effects);
      batch.forEach((item, i) => item.resolve(effects[i]?.value));
    } finally {
      clearTimeout(timer);
    }
  }
}

/** A statement's own error as it is (a constraint says what); anything else as STORE_UNAVAILABLE. */
function unavailable(error: unknown): unknown {
  if (error instanceof DoormanError || isStatementError(error)) return error;
  return new DoormanError('STORE_UNAVAILABLE', `PostgreSQL store: ${(error as Error).message}`, {
    cause: error,
  });
}
