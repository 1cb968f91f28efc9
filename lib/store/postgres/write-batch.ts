import postgres from 'postgres';
import type { AuditRecord } from '../../audit/event.ts';
import { DoormanError } from '../../errors.ts';
import type { Sql, Tx } from './connect.ts';
import type { SessionRow } from './session-table.ts';
import { isUnavailable } from './write.ts';
import { secondsSince } from '../../metrics/buckets.ts';
import { observeWrite } from '../../metrics/store.ts';

/** What one write did to the sessions, for this process's copy (applied at once, see SessionTable). */
export interface Effect<T> {
  value: T;
  /** Rows as written (RETURNING *). */
  rows?: readonly SessionRow[];
  /** Ids of sessions it deleted. */
  deleted?: readonly number[];
  /** Audit events it wrote (in its transaction): shipped once committed. */
  audit?: readonly AuditRecord[];
}

/** One write: runs inside the batch's transaction, after `begin` (which took the change number). */
export type Write<C, T> = (tx: Tx, context: C) => Promise<Effect<T>>;

interface Pending<C> {
  write: Write<C, unknown>;
  /** What this write needs taken before the batch's change number (see WriteBatchOptions.begin). */
  needs: string | undefined;
  /** When it was asked for (ms): it is refused once it has waited the deadline. */
  since: number;
  /** Rows it writes, about: a transaction takes writes up to maxRows of them. */
  rows: number;
  /** Writes of one kind next to each other run as one statement (WriteBatchOptions.merged). */
  merge: { kind: string; input: unknown } | undefined;
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
  /** Rows per transaction at most (each write says about how many it writes); the rest go in the next. */
  maxRows?: number;
  /**
   * Writes of a kind that can run as one statement (logins: one multi-row upsert), by kind: given the inputs of
   * writes next to each other in the batch, their effects, in order. A round trip a write is what would limit
   * a batch, not PostgreSQL.
   */
  merged?: Record<string, (tx: Tx, context: C, inputs: unknown[]) => Promise<Effect<unknown>[]>>;
}

/** An error of PostgreSQL about the statement itself (a constraint, a bad value): the write's own fault. */
const isStatementError = (error: unknown): boolean =>
  error instanceof postgres.PostgresError && !isUnavailable(error);

/**
 * Group commit for PostgreSQL: the writes asked for while the previous transaction runs share one transaction
 * and one change number (one NOTIFY), which is what makes tens of thousands of logins a second possible:
 * notifying commits serialise on a global lock in PostgreSQL, so their number must stay small (issue 15's
 * figures). Writes run in the order asked, one transaction at a time: the next starts only once the one before
 * has really ended (committed or rolled back), so a write is never overtaken. When a write fails on its own
 * account (a constraint), the batch is rolled back and each write runs again alone, so only that one fails.
 *
 * Deadlines: a write not confirmed within `deadlineMs` is answered STORE_UNAVAILABLE (the web app's 503), and
 * its transaction then rolls back instead of committing (the server bounds every statement too,
 * statement_timeout in connect.ts, so a statement stuck on another box's lock hands control back). Writes that
 * wait behind a transaction that does not end are refused once they have waited the deadline.
 */
export class WriteBatch<C> {
  readonly #options: WriteBatchOptions<C>;
  readonly #deadlineMs: number;
  #queue: Pending<C>[] = [];
  /** A flush is due at the next turn. */
  #scheduled = false;
  /** The transaction under way (until it really ends): writes asked for meanwhile go in the next, together. */
  #committing: Promise<void> | undefined;
  /** While a transaction does not end: refuses the writes behind it that waited their deadline. */
  #sweep: NodeJS.Timeout | undefined;

  constructor(options: WriteBatchOptions<C>) {
    this.#options = options;
    this.#deadlineMs = options.deadlineMs ?? 5000;
  }

  /**
   * `needs`: a lock the write needs taken first (begin gets them all, one batch's writes together); `rows`:
   * about how many rows it writes (a transaction holds the change number's lock for as long as it runs: it
   * must stay short, however many writes wait).
   */
  run<T>(
    write: Write<C, T>,
    options: { needs?: string; rows?: number; merge?: { kind: string; input: unknown } } = {},
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({
        write,
        needs: options.needs,
        rows: options.rows ?? 1,
        merge: options.merge,
        since: Date.now(),
        resolve: resolve as (value: unknown) => void,
        reject,
      });
      this.#schedule();
    });
  }

  /** Resolves once every write asked for so far has been answered and its transaction has ended. */
  async drain(): Promise<void> {
    while (this.#queue.length > 0 || this.#scheduled || this.#committing !== undefined) {
      await (this.#committing ?? new Promise((resolve) => setImmediate(resolve)));
    }
  }

  #schedule(): void {
    if (this.#committing !== undefined) {
      this.#sweep ??= setTimeout(() => {
        this.#sweep = undefined;
        this.#expire();
        if (this.#queue.length > 0) this.#schedule();
      }, this.#deadlineMs / 4);
      return;
    }
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => this.#flush());
  }

  /** Refuse the writes that have waited their whole deadline without their transaction starting. */
  #expire(): void {
    const now = Date.now();
    const expired = this.#queue.filter((item) => now - item.since >= this.#deadlineMs);
    if (expired.length === 0) return;
    this.#queue = this.#queue.filter((item) => now - item.since < this.#deadlineMs);
    const error = new DoormanError(
      'STORE_UNAVAILABLE',
      `PostgreSQL store: a write before this one has not ended within ${this.#deadlineMs} ms; nothing was written`,
    );
    for (const item of expired) item.reject(error);
  }

  #flush(): void {
    this.#scheduled = false;
    this.#expire();
    const maxRows = this.#options.maxRows ?? 5000;
    let count = 0;
    for (let rows = 0; count < this.#queue.length; count++) {
      rows += this.#queue[count]?.rows ?? 1;
      if (rows > maxRows && count > 0) break;
    }
    const batch = this.#queue.splice(0, count);
    if (batch.length === 0) return;
    this.#committing = this.#run(batch).finally(() => {
      this.#committing = undefined;
      clearTimeout(this.#sweep);
      this.#sweep = undefined;
      if (this.#queue.length > 0) this.#schedule();
    });
  }

  /** One batch to its end: answered when committed, or at the deadline; the promise ends with the transaction. */
  async #run(batch: readonly Pending<C>[]): Promise<void> {
    let answered = false;
    const timer = setTimeout(() => {
      answered = true;
      const error = new DoormanError(
        'STORE_UNAVAILABLE',
        `PostgreSQL store: the write was not confirmed within ${this.#deadlineMs} ms`,
      );
      for (const item of batch) item.reject(error);
    }, this.#deadlineMs);
    try {
      const started = performance.now();
      const { context, effects } = await this.#transaction(batch, () => answered);
      observeWrite(secondsSince(started));
      // What committed is this process's own to know, answered or not.
      this.#options.committed(context, effects);
      if (!answered) batch.forEach((item, i) => item.resolve(effects[i]?.value));
    } catch (error) {
      if (answered) return;
      if (!isStatementError(error) || batch.length === 1) {
        for (const item of batch) item.reject(unavailable(error));
        return;
      }
      clearTimeout(timer);
      // Someone's write failed on its own account: each alone, in order, so only that one fails.
      for (const item of batch) await this.#run([item]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The batch in one transaction. Once its writers have been answered 503 (`late`), it rolls back instead of
   * committing: a write answered "not saved" must not land afterwards. Only a deadline passing during COMMIT
   * itself can still let one land (PostgreSQL gone silent at that moment).
   */
  #transaction(
    batch: readonly Pending<C>[],
    late: () => boolean,
  ): Promise<{ context: C; effects: Effect<unknown>[] }> {
    const { sql, begin } = this.#options;
    const tooLate = () => {
      if (late())
        throw new DoormanError('STORE_UNAVAILABLE', 'PostgreSQL store: past the deadline, rolled back');
    };
    return sql.begin(async (tx) => {
      const needs = new Set(batch.flatMap((item) => (item.needs === undefined ? [] : [item.needs])));
      const context = await begin(tx, needs);
      const effects: Effect<unknown>[] = [];
      for (let i = 0; i < batch.length;) {
        tooLate();
        const item = batch[i] as Pending<C>;
        const merged = item.merge === undefined ? undefined : this.#options.merged?.[item.merge.kind];
        if (merged === undefined) {
          effects.push(await item.write(tx, context));
          i += 1;
          continue;
        }
        let end = i + 1;
        while (end < batch.length && batch[end]?.merge?.kind === item.merge?.kind) end += 1;
        const inputs = batch.slice(i, end).map((b) => b.merge?.input);
        effects.push(...(await merged(tx, context, inputs)));
        i = end;
      }
      tooLate();
      return { context, effects };
    }) as Promise<{ context: C; effects: Effect<unknown>[] }>;
  }
}

/** A statement's own error as it is (a constraint says what); anything else as STORE_UNAVAILABLE. */
function unavailable(error: unknown): unknown {
  if (error instanceof DoormanError || isStatementError(error)) return error;
  return new DoormanError('STORE_UNAVAILABLE', `PostgreSQL store: ${(error as Error).message}`, {
    cause: error,
  });
}
