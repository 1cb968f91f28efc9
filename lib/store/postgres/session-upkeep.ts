import type { AuditRecord } from '../../audit/event.ts';
import { expiryEvents } from '../../audit/expiry.ts';
import { toSession } from '../session.ts';
import type { Audited } from '../store.ts';
import type { Tx } from './connect.ts';
import { deleteSessions } from './session-deletions.ts';
import type { SessionRow } from './session-table.ts';
import type { Context } from './session-upsert.ts';
import type { WriteBatch } from './write-batch.ts';

/**
 * The sessions' upkeep on PostgreSQL, beside what logins and admins do (sessions.ts): the helpers' "last seen"
 * times, and the purge of what has ended. Both run in PgSessions' write batch, so their rows reach this
 * process's copy and every box's replica like any other write.
 */

/** Deletions are kept this long; a replica further behind loads everything again (replica.ts). */
export const DELETIONS_KEPT_MS = 86_400_000;
/** Ended sessions (and old deletion records) removed per write by purgeSessions. */
const PURGE_CHUNK_ROWS = 2000;
/** "Last seen" times per statement: a bounded statement, never one of 100,000 rows. */
const SEEN_PER_STATEMENT = 2000;

/**
 * "Last seen", in statements of at most SEEN_PER_STATEMENT rows. Only a later time is written; the rows take
 * this change number, so every box's replica learns the sighting (idleness is judged across all boxes).
 */
export function touchSessions(batch: WriteBatch<Context>, seen: ReadonlyMap<number, number>): Promise<void> {
  const chunks: Promise<void>[] = [];
  // A write per statement's worth: a transaction takes as many as keep it short (WriteBatch's maxRows). The
  // columns are made straight from the map: no [id, time] pair per session on the way (garbage by the
  // hundred thousand at each flush).
  let ids: number[] = [];
  let times: number[] = [];
  const write = (ids: number[], times: number[]) =>
    chunks.push(
      batch.run(
        async (tx, context) => {
          const rows = await tx<SessionRow[]>`
            UPDATE sessions SET last_seen = t.seen, change = ${context.change}
            FROM unnest(${ids}::bigint[], ${times}::bigint[]) AS t(id, seen)
            WHERE sessions.id = t.id AND t.seen > sessions.last_seen
            RETURNING sessions.*`;
          return { value: undefined, rows };
        },
        { rows: ids.length },
      ),
    );
  for (const [id, at] of seen) {
    ids.push(id);
    times.push(at);
    if (ids.length === SEEN_PER_STATEMENT) {
      write(ids, times);
      ids = [];
      times = [];
    }
  }
  if (ids.length > 0) write(ids, times);
  return Promise.all(chunks).then(() => undefined);
}

/**
 * Delete what is past its hard expiry or idle past its limit and `idleGraceMs`, and the deletions older than
 * DELETIONS_KEPT_MS, PURGE_CHUNK_ROWS a write: each write holds the sessions counter row while it runs, and
 * every box's logins wait behind it. `audit` writes the expiries' events in the write's transaction. Returns
 * how many sessions were deleted.
 */
export async function purgeSessions(
  batch: WriteBatch<Context>,
  idleGraceMs: number,
  audit: (tx: Tx, context: Context, audited: Audited) => Promise<AuditRecord[]>,
): Promise<number> {
  let purged = 0;
  for (;;) {
    const { sessions, records } = await batch.run(
      async (tx, context) => {
        const rows = await deleteSessions(
          tx,
          context,
          tx`id IN (SELECT id FROM sessions WHERE expires_at <= ${context.now}
            OR (idle_timeout IS NOT NULL AND last_seen + idle_timeout + ${idleGraceMs} < ${context.now})
            LIMIT ${PURGE_CHUNK_ROWS})`,
        );
        // Recorded by the box whose purge deleted the row, in its transaction: once site-wide.
        const events = await audit(tx, context, expiryEvents(rows.map(toSession)));
        const [old] = await tx<{ n: number }[]>`
          WITH old AS (
            DELETE FROM session_deletions WHERE ctid IN (
              SELECT ctid FROM session_deletions WHERE at < ${context.now - DELETIONS_KEPT_MS}
              LIMIT ${PURGE_CHUNK_ROWS})
            RETURNING change),
          pruned AS (
            UPDATE changes SET pruned = greatest(pruned, (SELECT max(change) FROM old))
            WHERE tab = 'sessions' AND EXISTS (SELECT 1 FROM old))
          SELECT count(*)::int AS n FROM old`;
        return {
          value: { sessions: rows.length, records: old?.n ?? 0 },
          deleted: rows.map((r) => r.id),
          audit: events,
        };
      },
      { rows: PURGE_CHUNK_ROWS },
    );
    purged += sessions;
    if (sessions < PURGE_CHUNK_ROWS && records < PURGE_CHUNK_ROWS) return purged;
  }
}
