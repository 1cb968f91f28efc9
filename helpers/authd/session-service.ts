import { SEE_AUTHD_LOG } from './log-hint.ts';
import { systemClock } from '../../lib/clock.ts';
import { bh, type HelperReply, type HelperRequest } from '../../lib/helper-protocol/message.ts';
import type { HelperHandlers } from '../../lib/helper-protocol/run.ts';
import type { Log } from '../../lib/log.ts';
import { BUSY_DEADLINE_MS, backoffMs, isBusy, unlessBusy } from '../../lib/store/busy.ts';
import { openDatabase } from '../../lib/store/database.ts';
import { SessionStore } from '../../lib/store/session-store.ts';
import { Reopening } from '../reopening.ts';
import { SessionLookup } from '../session-lookup.ts';

/**
 * The session lookup ("who is 10.0.0.5?") as runHelper's handlers, shared by the direct helper
 * (helpers/session-acl.ts, one per Squid child) and authd (one for every child's connection, so one DB handle
 * and one cache of answers however many children Squid starts).
 *
 * Nothing here ever waits for the DB's write lock (busy_timeout 0; another process may hold it for seconds):
 * answers come from memory or from reads, which WAL serves while another process writes. The rare read that
 * meets SQLITE_BUSY anyway (a WAL recovery or truncating checkpoint in another process) is tried again on a
 * timer. "Last seen" is bookkeeping: while the lock is held the times stay collected and are written later.
 */
export interface SessionServiceOptions {
  /**
   * Where the DB is and how often to write "last seen". Called when the DB is (re)opened, so a broken
   * configuration is answered with BH and retried, not an exit.
   */
  settings: () => { path: string; flushEveryMs: number };
  log: Log;
}

export interface SessionService {
  /** runHelper's handlers; authd gives the same ones to every connection (one cache, one DB handle). */
  handlers: HelperHandlers;
  /**
   * Write the "last seen" times still pending (waiting a little for the lock: nobody awaits an answer now)
   * and close the DB. Called once, after the last answer.
   */
  close(): void | Promise<void>;
}

/** "Last seen" times written per transaction: about 5 ms of work. */
const SEEN_PER_FLUSH = 2000;
/** After SQLITE_BUSY, "last seen" is tried again this much later (also without traffic, from a timer). */
const FLUSH_RETRY_MS = 1000;
/** At exit nobody is waiting for an answer any more: the last flush may wait this long for the lock. */
const FINAL_FLUSH_BUSY_TIMEOUT_MS = 2000;
const UNAVAILABLE = `session DB unavailable, ${SEE_AUTHD_LOG}`;

export function createSessionService(options: SessionServiceOptions): SessionService {
  const { log } = options;
  const lookup = new Reopening(
    'session DB',
    () => {
      const where = options.settings();
      const db = openDatabase(where.path, { mustExist: true, busyTimeoutMs: 0 });
      return {
        db,
        flushEveryMs: where.flushEveryMs,
        sessions: new SessionLookup(new SessionStore(db, systemClock), systemClock),
      };
    },
    log,
    (opened) => opened.db.close(),
  );

  let lastFlush = Date.now();
  let backlog = false;
  let busyUntil = 0;
  let retry: NodeJS.Timeout | undefined;

  /**
   * "Last seen" in chunks, one per batch of requests once the interval is up, so no flush stalls answers. When
   * another process holds the write lock, flushSeen keeps what it could not write; it is tried again a second
   * later, from a timer too, so an idle helper writes it once the lock is free.
   */
  function flushSeen(): void {
    lookup.use((l) => {
      const now = Date.now();
      if (now < busyUntil || (!backlog && now - lastFlush < l.flushEveryMs)) return;
      lastFlush = now;
      let left = 0;
      if (unlessBusy(() => (left = l.sessions.flushSeen(SEEN_PER_FLUSH)))) {
        if (busyUntil !== 0) log('last seen: written again; the session DB lock was released');
        busyUntil = 0;
        backlog = left > 0;
        return;
      }
      if (busyUntil === 0) log('last seen: the session DB is locked by another process; will write it later');
      busyUntil = now + FLUSH_RETRY_MS;
      backlog = true;
      retry ??= setTimeout(() => {
        retry = undefined;
        flushSeen();
      }, FLUSH_RETRY_MS).unref();
    });
  }

  /**
   * One answer. A lookup that meets SQLITE_BUSY (reads rarely do, see above) is asked again on a timer with
   * backoff, never in a blocking wait, and answered BH only past BUSY_DEADLINE_MS. Other errors drop the DB
   * handle, to be opened again (Reopening).
   */
  function answer(request: HelperRequest, since?: number, attempt = 0): HelperReply | Promise<HelperReply> {
    const l = lookup.get();
    if (l === undefined) return bh(UNAVAILABLE);
    try {
      return l.sessions.handle(request);
    } catch (error) {
      if (!isBusy(error)) {
        lookup.fail(error);
        return bh(UNAVAILABLE);
      }
      // The clock is read only once a lookup meets the lock, never on the per-line path.
      const started = since ?? Date.now();
      if (Date.now() - started >= BUSY_DEADLINE_MS) {
        log(`session DB busy for ${BUSY_DEADLINE_MS} ms (locked by another process): answered BH`);
        return bh(`session DB busy, ${SEE_AUTHD_LOG}`);
      }
      return new Promise((resolve) => {
        setTimeout(() => resolve(answer(request, started, attempt + 1)), backoffMs(attempt));
      });
    }
  }

  return {
    handlers: {
      // Busy: keep the cached answers; a change committed meanwhile is seen at a later batch.
      beforeBatch: () => lookup.use((l) => void unlessBusy(() => l.sessions.refresh())),
      handle: (request) => answer(request),
      afterBatch: flushSeen,
    },
    close() {
      if (retry !== undefined) clearTimeout(retry);
      lookup.use((l) => {
        l.db.pragma(`busy_timeout = ${FINAL_FLUSH_BUSY_TIMEOUT_MS}`);
        l.sessions.flushSeen();
        l.db.close();
      });
    },
  };
}
