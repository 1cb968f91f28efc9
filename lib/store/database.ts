import Database from 'better-sqlite3';
import { DoormanError } from '../errors.ts';
import { migrations, SCHEMA_VERSION } from './migrations.ts';

export type Db = Database.Database;

export interface OpenOptions {
  /** Open without write access (still may need to create the -shm file in WAL mode). */
  readonly?: boolean;
  /** Fail instead of creating a new DB (helpers: a missing DB means Doorman is not set up, say so). */
  mustExist?: boolean;
  /**
   * How long a statement waits for another process's lock, ms, holding the whole thread meanwhile (SQLite's
   * busy handler sleeps; better-sqlite3 is synchronous). The default, 5000, is for the CLI, which serves
   * nobody else. A program with an event loop that serves others (the web app, the helpers) passes 0 and
   * waits on timers instead (busy.ts).
   */
  busyTimeoutMs?: number;
  /**
   * The same while opening and migrating (a migration takes the write lock); default busyTimeoutMs. The web
   * app waits here at start-up, before it serves anything.
   */
  openBusyTimeoutMs?: number;
}

/** The CLI's busy timeout (see OpenOptions.busyTimeoutMs). */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000;

/**
 * Open the session DB: WAL (readers never block the writer, several processes at once), a busy timeout
 * (see OpenOptions), and the schema brought to the current version.
 */
export function openDatabase(path: string, options: OpenOptions = {}): Db {
  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  let db: Db | undefined;
  try {
    db = new Database(path, {
      readonly: options.readonly ?? false,
      fileMustExist: (options.mustExist ?? false) || (options.readonly ?? false),
    });
    const openWaitMs = options.openBusyTimeoutMs ?? busyTimeoutMs;
    db.pragma(`busy_timeout = ${openWaitMs}`);
    if (!options.readonly) {
      switchToWal(db, openWaitMs);
      // NORMAL is durable across a process crash in WAL mode; only a power cut can lose the last commits.
      db.pragma('synchronous = NORMAL');
    }
    db.pragma('foreign_keys = ON');
  } catch (error) {
    db?.close();
    throw new DoormanError(
      'STORE_UNAVAILABLE',
      `cannot open session DB ${path}: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  try {
    migrate(db);
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * journal_mode = WAL, tried again for up to `waitMs` while it meets SQLITE_BUSY. On a fresh file (still in
 * rollback mode) several processes opening at once can deadlock on the switch, and SQLite then answers BUSY
 * at once instead of calling the busy handler. Only at open, only on a file not yet in WAL (later opens find
 * it so and return at once), and never longer than the busy timeout SQLite itself would wait.
 */
function switchToWal(db: Db, waitMs: number): void {
  const until = Date.now() + waitMs;
  for (let sleepMs = 5; ; sleepMs = Math.min(sleepMs * 2, 100)) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== 'string' || !code.startsWith('SQLITE_BUSY') || Date.now() >= until) throw error;
      Atomics.wait(pause, 0, 0, sleepMs);
    }
  }
}

/** Bring the schema up to date. BEGIN IMMEDIATE: two processes starting together migrate once. */
export function migrate(db: Db): void {
  const current = () => db.pragma('user_version', { simple: true }) as number;
  const tooNew = (from: number) =>
    new DoormanError(
      'SCHEMA_TOO_NEW',
      `session DB schema ${from} is newer than this Doorman (${SCHEMA_VERSION}): upgrade Doorman`,
    );
  const found = current();
  if (found === SCHEMA_VERSION) return;
  // Checked before the read-only case too: a read-only helper must not say "needs N" about a newer DB.
  if (found > SCHEMA_VERSION) throw tooNew(found);
  if (db.readonly) {
    throw new DoormanError('STORE_UNAVAILABLE', `session DB is at schema ${found}, needs ${SCHEMA_VERSION}`);
  }
  db.exec('BEGIN IMMEDIATE');
  try {
    // Read again under the lock: another process may have migrated (or upgraded) it meanwhile.
    const from = current();
    if (from > SCHEMA_VERSION) throw tooNew(from);
    for (let v = from; v < SCHEMA_VERSION; v++) db.exec(migrations[v] ?? '');
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
    db.exec('COMMIT');
  } catch (error) {
    db.exec('ROLLBACK');
    throw error;
  }
}
