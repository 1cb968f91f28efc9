import type { Statement } from 'better-sqlite3';
import type { Db } from './database.ts';

/** What a failure counter counts: wrong passwords for one account, or from one client address group. */
export type FailureKind = 'account' | 'address';

/** A key's current window: `failures` wrong passwords since `start` (ms since the epoch). */
export interface FailureWindow {
  start: number;
  failures: number;
}

/** Address groups remembered per account as ones it signed in from; the oldest go first. */
export const KNOWN_PER_ACCOUNT = 16;
/**
 * How long a right password makes its address group known for the account. Written once (a later sign-in
 * from there writes nothing, so the Basic helper's successful checks stay reads), so it lapses this long after
 * the first one and the next right password there writes it again.
 */
export const KNOWN_FOR_MS = 30 * 86_400_000;
/** Ended windows deleted per write, so that a flood's rows go without one long delete. */
const PRUNE_BATCH = 100;

/**
 * The session DB's tables for wrong sign-ins (schema 5), shared by every process that checks directory
 * passwords (the splash page in serve, the Basic helper in authd): the counters, one fixed window per key, and
 * the address groups each account has signed in from. Only the SQL: what counts and what is refused is
 * lib/security/password-guesses.ts. Statements are prepared once.
 */
export class SignInFailureStore {
  readonly #db: Db;
  readonly #window: Statement<[FailureKind, string], FailureWindow>;
  readonly #add: Statement<{ kind: FailureKind; key: string; now: number; windowMs: number }>;
  readonly #takeBack: Statement<{ kind: FailureKind; key: string; start: number }>;
  readonly #known: Statement<[{ account: string; address: string; after: number }], unknown>;
  readonly #learn: Statement<{ account: string; address: string; now: number }>;
  readonly #forgetOldest: Statement<{ account: string; keep: number }>;
  readonly #prune: Statement<{ before: number; batch: number }>;

  constructor(db: Db) {
    this.#db = db;
    this.#window = db.prepare(
      'SELECT window_start AS start, failures FROM sign_in_failures WHERE kind = ? AND key = ?',
    );
    // A window that has ended starts again at this failure.
    this.#add = db.prepare(`
      INSERT INTO sign_in_failures (kind, key, window_start, failures) VALUES (@kind, @key, @now, 1)
      ON CONFLICT (kind, key) DO UPDATE SET
        failures = CASE WHEN window_start + @windowMs <= @now THEN 1 ELSE failures + 1 END,
        window_start = CASE WHEN window_start + @windowMs <= @now THEN @now ELSE window_start END`);
    this.#takeBack = db.prepare(`
      UPDATE sign_in_failures SET failures = failures - 1
      WHERE kind = @kind AND key = @key AND window_start = @start AND failures > 0`);
    this.#known = db
      .prepare(
        'SELECT 1 FROM sign_in_known WHERE account = @account AND address = @address AND since > @after',
      )
      .pluck();
    this.#learn = db.prepare(
      'INSERT OR REPLACE INTO sign_in_known (account, address, since) VALUES (@account, @address, @now)',
    );
    this.#forgetOldest = db.prepare(`
      DELETE FROM sign_in_known WHERE account = @account AND address NOT IN (
        SELECT address FROM sign_in_known WHERE account = @account ORDER BY since DESC LIMIT @keep)`);
    this.#prune = db.prepare(`
      DELETE FROM sign_in_failures WHERE (kind, key) IN (
        SELECT kind, key FROM sign_in_failures WHERE window_start < @before LIMIT @batch)`);
  }

  /** The key's window as stored (it may have ended: the caller judges with its clock), or undefined. */
  window(kind: FailureKind, key: string): FailureWindow | undefined {
    return this.#window.get(kind, key);
  }

  /** One more failure for `key`; a window older than `windowMs` starts again at `now`. Returns the window. */
  addFailure(kind: FailureKind, key: string, now: number, windowMs: number): FailureWindow {
    this.#add.run({ kind, key, now, windowMs });
    return this.window(kind, key) ?? { start: now, failures: 1 };
  }

  /** Take back one failure counted ahead of a check that then succeeded, if its window is still `start`'s. */
  takeBack(kind: FailureKind, key: string, start: number): void {
    this.#takeBack.run({ kind, key, start });
  }

  /** Whether `account` signed in with a right password from `address` (a group) since `after`. */
  isKnown(account: string, address: string, after: number): boolean {
    return this.#known.get({ account, address, after }) !== undefined;
  }

  /** `address` is known for `account` from `now`; only the KNOWN_PER_ACCOUNT most recent are kept. */
  learn(account: string, address: string, now: number): void {
    this.#learn.run({ account, address, now });
    this.#forgetOldest.run({ account, keep: KNOWN_PER_ACCOUNT });
  }

  /** Delete some windows that started before `before` (all ended): rows of a flood go a batch at a time. */
  prune(before: number): void {
    this.#prune.run({ before, batch: PRUNE_BATCH });
  }

  /** Run `work` in one write transaction, the lock taken at BEGIN (SQLITE_BUSY then, before any write). */
  immediate<T>(work: () => T): T {
    return this.#db.transaction(work).immediate();
  }
}
