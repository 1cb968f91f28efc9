import { hardEndOf, type Replaced, type SessionSource, type StartSession } from '../session.ts';
import type { Tx } from './connect.ts';
import type { SessionRow } from './session-table.ts';

/** What every write of one batch shares: its change number and its time. */
export interface Context {
  change: number;
  now: number;
}

/** A session as written, and the live session it replaced on its key, if any (as the database had it). */
export interface Upserted {
  row: SessionRow;
  replaced: Replaced | undefined;
}

interface UpsertedRow extends SessionRow {
  replaced_username: string | null;
  replaced_source: SessionSource | null;
  replaced_live: boolean;
}

/**
 * Several sessions started in one statement (a replaced row gets a new id, see schema.ts, and is recorded as
 * deleted: a box whose copy still holds it, and whose next delta brings no row for the key, must drop it); the
 * rows in the order of `inputs`, each with the live session it replaced, read by the same statement from the
 * database (not from this box's copy, which may not have another box's latest login yet). A key given twice
 * starts a new statement there, so the later login replaces the earlier one as it would one at a time.
 */
export async function upsertMany(
  tx: Tx,
  context: Context,
  inputs: readonly StartSession[],
): Promise<Upserted[]> {
  const out: Upserted[] = [];
  for (let start = 0; start < inputs.length;) {
    const seen = new Set<string>();
    let end = start;
    while (end < inputs.length) {
      const { key } = inputs[end] as StartSession;
      const id = `${key.kind}:${key.value}`;
      if (seen.has(id)) break;
      seen.add(id);
      end += 1;
    }
    const chunk = inputs.slice(start, end);
    const { now, change } = context;
    const rows = await tx<UpsertedRow[]>`
      WITH input AS (
        SELECT * FROM unnest(
          ${chunk.map((i) => i.key.kind)}::text[], ${chunk.map((i) => i.key.value)}::text[],
          ${chunk.map((i) => i.username)}::text[], ${chunk.map((i) => i.source)}::text[],
          ${chunk.map((i) => hardEndOf(i, now) ?? null)}::bigint[], ${chunk.map((i) => i.idleTimeoutMs ?? null)}::bigint[],
          ${chunk.map((i) => i.mac ?? null)}::text[]
        ) WITH ORDINALITY AS t(key_kind, key, username, source, expires_at, idle_timeout, mac, n)
      ),
        replaced AS (
          SELECT s.id, s.key_kind, s.key, s.username, s.source, s.expires_at
          FROM sessions s JOIN input i ON s.key_kind = i.key_kind AND s.key = i.key
        ),
        recorded AS (INSERT INTO session_deletions (id, change, at) SELECT id, ${change}, ${now} FROM replaced),
        written AS (
          INSERT INTO sessions
            (key_kind, key, username, source, created_at, last_seen, expires_at, idle_timeout, mac, change)
          SELECT key_kind, key, username, source, ${now}, ${now}, expires_at, idle_timeout, mac, ${change}
            FROM input ORDER BY n
          ON CONFLICT (key_kind, key) DO UPDATE SET id = DEFAULT, username = excluded.username,
            source = excluded.source, created_at = excluded.created_at, last_seen = excluded.last_seen,
            expires_at = excluded.expires_at, idle_timeout = excluded.idle_timeout, mac = excluded.mac,
            change = excluded.change
          RETURNING *
        )
      SELECT w.*, r.username AS replaced_username, r.source AS replaced_source,
        (r.id IS NOT NULL AND (r.expires_at IS NULL OR r.expires_at > ${now})) AS replaced_live
      FROM written w LEFT JOIN replaced r ON r.key_kind = w.key_kind AND r.key = w.key`;
    const byKey = new Map(rows.map((row) => [`${row.key_kind}:${row.key}`, row]));
    for (const input of chunk) {
      const found = byKey.get(`${input.key.kind}:${input.key.value}`);
      if (found === undefined) throw new Error('INSERT ... RETURNING gave no row for a session');
      const { replaced_username: username, replaced_source: source, replaced_live: live, ...row } = found;
      out.push({
        row,
        replaced: live && username !== null && source !== null ? { username, source } : undefined,
      });
    }
    start = end;
  }
  return out;
}

/** Insert or replace the session on a key: a replaced row gets a new id (see schema.ts). */
export async function upsert(tx: Tx, context: Context, input: StartSession): Promise<Upserted> {
  const [upserted] = await upsertMany(tx, context, [input]);
  if (upserted === undefined) throw new Error('INSERT ... RETURNING gave no row');
  return upserted;
}
