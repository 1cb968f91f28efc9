import { systemClock, type Clock } from '../clock.ts';
import { backoffMs, BUSY_DEADLINE_MS, isBusy, realSchedule, StoreBusyError, type Schedule } from './busy.ts';
import type { Db } from './database.ts';
import { secondsSince } from '../metrics/buckets.ts';
import { observeWrite } from '../metrics/store.ts';

interface Pending {
  write: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** When it was asked for (clock ms): it is given up BUSY_DEADLINE_MS later. */
  since: number;
}

/**
 * What the writes of one transaction leave to do once, at its end: the audit trail's rows of the whole batch in
 * one multi-row INSERT, and shipping them once they are durable (lib/store/audit-journal.ts). One statement a
 * batch instead of one a login is most of what the trail costs a login less. Given to the GroupCommit, which
 * runs it at the end of every batch, whatever the writes were and however they were handed to it.
 */
export interface BatchTail {
  /** Inside the transaction, after its last write. Throwing fails the whole batch, as a failed commit does. */
  flush(): void;
  /** The transaction committed (before any write of it is resolved). */
  committed(): void;
  /** The transaction was rolled back (to be tried again, or failed): whatever its writes left is void. */
  discarded(): void;
}

/** Where writes go: a GroupCommit, or anything that runs them and says when they are durable. */
export interface Commits {
  run<T>(write: () => T): Promise<T>;
}

export interface GroupCommitOptions {
  clock?: Clock;
  schedule?: Schedule;
  /** How long a write waits for another process's lock before it fails with StoreBusyError. */
  deadlineMs?: number;
  /** Run at the end of every batch's transaction (flush), and after it (committed or discarded). */
  tails?: readonly BatchTail[];
}

/**
 * Group commit: writes asked for in one turn of the event loop run in one transaction, committed once. A
 * commit is most of what a login costs (the WAL frame, the locks); the web app has tens of logins in flight,
 * so sharing commits lets it do several times more. Each write still runs alone in request order, and its own
 * error (a constraint) fails only its own promise. A failed commit fails them all, and none is applied.
 *
 * When another process holds the write lock (SQLITE_BUSY: the DB is opened with busy_timeout 0, so it is
 * known at once and nothing blocks), the batch is rolled back and tried again on a timer with backoff, with
 * whatever writes arrived meanwhile; a write still waiting `deadlineMs` after it was asked for fails with
 * StoreBusyError (the web app's 503). Writes are therefore closures that can run again.
 */
export class GroupCommit implements Commits {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #schedule: Schedule;
  readonly #deadlineMs: number;
  readonly #tails: readonly BatchTail[];
  #queue: Pending[] = [];
  /** A flush is scheduled (next turn, or a retry timer): run() need not schedule another. */
  #scheduled = false;
  /** Busy tries in a row, for the backoff. */
  #attempt = 0;

  constructor(db: Db, options: GroupCommitOptions = {}) {
    this.#db = db;
    this.#clock = options.clock ?? systemClock;
    this.#schedule = options.schedule ?? realSchedule;
    this.#deadlineMs = options.deadlineMs ?? BUSY_DEADLINE_MS;
    this.#tails = options.tails ?? [];
  }

  /** Run `write` in the next shared transaction; resolves with its result once that transaction committed. */
  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({
        write,
        resolve: resolve as (value: unknown) => void,
        reject,
        since: this.#clock.now(),
      });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#queue;
    this.#queue = [];
    if (batch.length === 0) return;
    let outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    const tails = this.#tails;
    const started = performance.now();
    try {
      // IMMEDIATE: the write lock is taken at BEGIN, so a busy DB fails before any write has run.
      this.#db
        .transaction(() => {
          outcomes = [];
          for (const item of batch) {
            try {
              outcomes.push({ ok: true, value: item.write() });
            } catch (error) {
              // A busy write fails the whole batch (below), to be tried again; nothing of it stands. So does
              // one that took the transaction down with it (SQLITE_FULL, IOERR, NOMEM: SQLite rolled all of it
              // back): the writes after it must not run, and commit, outside any transaction.
              if (isBusy(error) || !this.#db.inTransaction) throw error;
              // SQLite undoes just that statement; the others in the transaction stand.
              outcomes.push({ ok: false, error });
            }
          }
          for (const tail of tails) tail.flush();
        })
        .immediate();
    } catch (error) {
      for (const tail of tails) tail.discarded();
      if (isBusy(error)) return this.#retry(batch, error);
      this.#attempt = 0;
      for (const item of batch) item.reject(error);
      return;
    }
    this.#attempt = 0;
    observeWrite(secondsSince(started));
    for (const tail of tails) tail.committed();
    batch.forEach((item, i) => {
      const outcome = outcomes[i];
      if (outcome?.ok) item.resolve(outcome.value);
      else item.reject(outcome?.error);
    });
  }

  /** Another process holds the lock: give up what waited too long, try the rest (and newcomers) later. */
  #retry(batch: Pending[], error: unknown): void {
    const now = this.#clock.now();
    const waiting: Pending[] = [];
    for (const item of batch) {
      if (now - item.since >= this.#deadlineMs)
        item.reject(new StoreBusyError(now - item.since, { cause: error }));
      else waiting.push(item);
    }
    // Ahead of writes that arrived since: request order is kept.
    this.#queue = [...waiting, ...this.#queue];
    if (this.#queue.length === 0) {
      this.#attempt = 0;
      return;
    }
    const oldest = this.#queue[0]?.since ?? now;
    const wait = Math.max(0, Math.min(backoffMs(this.#attempt++), oldest + this.#deadlineMs - now));
    this.#scheduled = true;
    this.#schedule(() => this.#flush(), wait);
  }
}
