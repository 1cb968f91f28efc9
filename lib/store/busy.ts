import type { Clock } from '../clock.ts';
import { DoormanError } from '../errors.ts';

/**
 * SQLITE_BUSY without blocking. better-sqlite3 is synchronous, so SQLite's own busy timeout would hold the
 * whole thread (every other request, every helper answer) while another process keeps the write lock.
 * Programs with an event loop therefore open the DB with busy_timeout 0 (database.ts) and wait here instead,
 * on timers: a write that finds the DB locked is tried again with backoff until a deadline, and only then
 * given up as StoreBusyError, which the web app answers with 503 and Retry-After.
 */

/** How long a login, logout or admin write waits for another process's write lock before it is given up. */
export const BUSY_DEADLINE_MS = 5000;
/** First wait after SQLITE_BUSY; doubled on each further try up to BUSY_MAX_BACKOFF_MS. */
export const BUSY_FIRST_BACKOFF_MS = 5;
/** Tries are cheap (BEGIN IMMEDIATE fails at once), so a freed lock is taken within a tenth of a second. */
export const BUSY_MAX_BACKOFF_MS = 100;
/** What Retry-After says when a write was given up. */
export const BUSY_RETRY_AFTER_SECONDS = 5;

/**
 * Another connection holds a lock this statement needs: SQLITE_BUSY and its extended codes (_SNAPSHOT: a
 * read transaction's snapshot is stale for writing; _RECOVERY: another process is recovering the WAL;
 * _TIMEOUT). better-sqlite3 puts the extended code in `code`.
 */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) || error instanceof StoreBusyError;
}

/** A write given up after waiting `waitedMs` for another process's lock on the session DB. */
export class StoreBusyError extends DoormanError {
  readonly waitedMs: number;
  constructor(waitedMs: number, options?: { cause?: unknown }) {
    super(
      'STORE_UNAVAILABLE',
      `the session database is locked by another process (waited ${(waitedMs / 1000).toFixed(1)} s)`,
      options,
    );
    this.name = 'StoreBusyError';
    this.waitedMs = waitedMs;
  }
}

/** Wait `ms`, then run `task`: setTimeout, or a manual scheduler in tests. */
export type Schedule = (task: () => void, ms: number) => void;
export const realSchedule: Schedule = (task, ms) => void setTimeout(task, ms);

/** The wait before try number `attempt + 1` (attempt counts from 0). */
export function backoffMs(attempt: number): number {
  return Math.min(BUSY_MAX_BACKOFF_MS, BUSY_FIRST_BACKOFF_MS * 2 ** Math.min(attempt, 16));
}

export interface RetryOptions {
  clock: Clock;
  schedule?: Schedule;
  /** Default BUSY_DEADLINE_MS. */
  deadlineMs?: number;
}

/**
 * Run `action` (synchronous SQLite work) until it does not fail with SQLITE_BUSY, waiting between tries on
 * timers, never in SQLite's busy handler. Other errors are thrown at once; past the deadline the busy error
 * becomes a StoreBusyError. `action` must be safe to run again after a busy failure: a transaction that failed
 * was rolled back.
 */
export async function retryWhileBusy<T>(action: () => T, options: RetryOptions): Promise<T> {
  const { clock } = options;
  const schedule = options.schedule ?? realSchedule;
  const started = clock.now();
  const deadline = started + (options.deadlineMs ?? BUSY_DEADLINE_MS);
  for (let attempt = 0; ; attempt++) {
    try {
      return action();
    } catch (error) {
      if (!isBusy(error)) throw error;
      const now = clock.now();
      if (now >= deadline) throw new StoreBusyError(now - started, { cause: error });
      const wait = Math.min(backoffMs(attempt), deadline - now);
      await new Promise<void>((resolve) => schedule(resolve, wait));
    }
  }
}

/**
 * Run `action` unless the DB is busy: true if it ran, false if it met SQLITE_BUSY (and was undone). For work
 * that may as well happen later (refreshing a cache, writing "last seen"); other errors are thrown.
 */
export function unlessBusy(action: () => void): boolean {
  try {
    action();
    return true;
  } catch (error) {
    if (isBusy(error)) return false;
    throw error;
  }
}
