import type { Db } from './database.ts';

interface Pending {
  write: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: writes asked for in one turn of the event loop run in one transaction, committed once. A
 * commit is most of what a login costs (the WAL frame, the locks); the web app has tens of logins in flight,
 * so sharing commits lets it do several times more. Each write still runs alone in request order, and its own
 * error (a constraint) fails only its own promise. A failed commit fails them all, and none is applied.
 */
/** Where writes go: a GroupCommit, or anything that runs them and says when they are durable. */
export interface Commits {
  run<T>(write: () => T): Promise<T>;
}

export class GroupCommit implements Commits {
  readonly #db: Db;
  #queue: Pending[] = [];

  constructor(db: Db) {
    this.#db = db;
  }

  /** Run `write` in the next shared transaction; resolves with its result once that transaction committed. */
  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({ write, resolve: resolve as (value: unknown) => void, reject });
      if (this.#queue.length === 1) setImmediate(() => this.#flush());
    });
  }

  #flush(): void {
    const batch = this.#queue;
    this.#queue = [];
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      this.#db.transaction(() => {
        for (const item of batch) {
          try {
            outcomes.push({ ok: true, value: item.write() });
          } catch (error) {
            // SQLite undoes just that statement; the others in the transaction stand.
            outcomes.push({ ok: false, error });
          }
        }
      })();
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    batch.forEach((item, i) => {
      const outcome = outcomes[i];
      if (outcome?.ok) item.resolve(outcome.value);
      else item.reject(outcome?.error);
    });
  }
}
