import { SEE_AUTHD_LOG } from './log-hint.ts';
import { systemClock, type Clock } from '../../lib/clock.ts';
import { bh } from '../../lib/helper-protocol/message.ts';
import type { Log } from '../../lib/log.ts';
import { requireCurrentSchema } from '../../lib/store/postgres/migrate.ts';
import { PgSessions } from '../../lib/store/postgres/sessions.ts';
import type { PostgresBox } from '../../lib/store/postgres/store.ts';
import { SessionLookup, type LookupStore } from '../session-lookup.ts';
import type { SessionService } from './session-service.ts';

/** "Last seen" times taken from the lookup per flush (written in statements of 2,000, one write at a time). */
const SEEN_PER_FLUSH = 5000;
/** Between tries to load the sessions while PostgreSQL cannot be reached. */
const LOAD_RETRY_MS = 1000;
/** A failed load is logged at most this often. */
const LOAD_LOG_MS = 10_000;
/** At exit: the last "last seen" write and the client's end may take this long. */
const CLOSE_GRACE_MS = 2000;

export interface PgSessionServiceOptions {
  /** authd's client and replica (lib/store/postgres/store.ts), shared with its directory settings. */
  box: PostgresBox;
  flushEveryMs: number;
  log: Log;
  clock?: Clock;
}

/**
 * The session lookup on a PostgreSQL store: every answer from this process's copy of the sessions (the replica,
 * a full load at start, then changes as every box makes them), so no lookup ever waits on the network and an
 * unreachable PostgreSQL is no outage for identified clients: the copy keeps answering, each session's own end
 * honoured, its age logged. Until the first load, lookups answer BH (nothing is known yet); the load is tried
 * again every second. "Last seen" goes to PostgreSQL in batches; a batch that fails is kept and merged into the
 * next, so an outage loses no sighting.
 */
export function createPgSessionService(options: PgSessionServiceOptions): SessionService & {
  /** Resolves once the sessions are loaded (authd is "ready" then). */
  loaded: Promise<void>;
} {
  const { log } = options;
  const clock = options.clock ?? systemClock;
  const { sql, replica } = options.box;
  const sessions = new PgSessions(sql, replica, { clock });
  /** Sightings not written yet (a write failed, or one was under way), merged (the later time wins). */
  let unwritten = new Map<number, number>();
  /** The "last seen" write under way: one at a time, so sightings never pile into one long transaction. */
  let touching: Promise<void> | undefined;
  const source: LookupStore = {
    find: (key) => sessions.find(key),
    dataVersion: () => sessions.changeStamp(),
    touch(seen) {
      // Nothing waiting and no write under way (the usual flush): the lookup's map is written as it is, never
      // copied (at a million sessions a copy is tens of megabytes of garbage a flush). Else merged to wait.
      let batch: ReadonlyMap<number, number>;
      if (touching === undefined && unwritten.size === 0) batch = seen;
      else {
        for (const [id, at] of seen) unwritten.set(id, Math.max(at, unwritten.get(id) ?? 0));
        if (touching !== undefined || unwritten.size === 0) return;
        batch = unwritten;
        unwritten = new Map();
      }
      if (batch.size === 0) return;
      touching = sessions
        .touch(batch)
        .catch(() => {
          for (const [id, at] of batch) unwritten.set(id, Math.max(at, unwritten.get(id) ?? 0));
        })
        .finally(() => (touching = undefined));
    },
  };
  // The replica is in memory already: a cache of its answers would only double the memory.
  const lookup = new SessionLookup(source, clock, { cache: false });
  let stopped = false;

  const loaded = (async () => {
    let lastLog = -Infinity;
    for (;;) {
      try {
        await requireCurrentSchema(sql);
        await replica.start();
        log(`sessions loaded from PostgreSQL: ${sessions.size}`);
        return;
      } catch (error) {
        if (stopped) return;
        if (clock.now() - lastLog >= LOAD_LOG_MS) {
          lastLog = clock.now();
          log(
            `sessions not loaded yet (${(error as Error).message}): answering BH, trying again every second`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, LOAD_RETRY_MS));
      }
    }
  })();

  let lastFlush = clock.now();
  let backlog = false;
  /** Once per interval, in bounded chunks (one per batch of lookups while a backlog lasts). */
  const flushSeen = (force = false) => {
    if (!force && !backlog && clock.now() - lastFlush < options.flushEveryMs) return;
    lastFlush = clock.now();
    backlog = lookup.flushSeen(force ? Infinity : SEEN_PER_FLUSH) > 0;
  };

  return {
    loaded,
    handlers: {
      beforeBatch: () => lookup.refresh(),
      handle: (request) =>
        replica.loaded()
          ? lookup.handle(request)
          : bh(`sessions not loaded yet from PostgreSQL, ${SEE_AUTHD_LOG}`),
      afterBatch: () => flushSeen(),
    },
    async close() {
      stopped = true;
      flushSeen(true);
      if (unwritten.size > 0) source.touch(new Map());
      await Promise.race([
        touching?.then(() => source.touch(new Map())).then(() => sessions.drain()) ?? sessions.drain(),
        new Promise((resolve) => setTimeout(resolve, CLOSE_GRACE_MS)),
      ]);
      await options.box.close(CLOSE_GRACE_MS);
    },
  };
}
