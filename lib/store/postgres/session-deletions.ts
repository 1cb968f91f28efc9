import type postgres from 'postgres';
import type { Tx } from './connect.ts';
import type { SessionRow } from './session-table.ts';

/**
 * Deleting sessions so that every box learns of it. A replica catches up by change number (schema.ts): a row
 * that is gone has no number left to be found by, so each deleted session's id is recorded in
 * session_deletions under the deleting write's sessions change number, in the same statement as the DELETE.
 * Every DELETE FROM sessions goes through here (the session repository's, a Device Group change's).
 *
 * `where` is a fragment of the caller's (tx`id = ANY(${ids}::bigint[])`, tx`source = ANY(...)`, ...);
 * `change` the sessions change number the write took, `now` its time (ms), by which deletions are pruned.
 * Returns the rows as they were.
 */
export async function deleteSessions(
  tx: Tx,
  context: { change: number; now: number },
  where: postgres.Fragment,
): Promise<SessionRow[]> {
  return tx<SessionRow[]>`
    WITH gone AS (DELETE FROM sessions WHERE ${where} RETURNING *),
      recorded AS (INSERT INTO session_deletions (id, change, at) SELECT id, ${context.change}, ${context.now} FROM gone)
    SELECT * FROM gone`;
}
