import type { Tx } from './connect.ts';
import { CHANGES_CHANNEL, type ReplicatedTable } from './schema.ts';

/**
 * The next change number of `tab`, announced to every box at commit (NOTIFY is transactional: sent only if the
 * transaction commits, and after it). Call it first in a writing transaction: it holds `tab`'s counter row
 * until commit, so writers of one table commit in the order of their numbers (see schema.ts). One statement.
 */
export async function takeChange(tx: Tx, tab: ReplicatedTable): Promise<number> {
  const [row] = await tx<{ last: number }[]>`
    WITH next AS (UPDATE changes SET last = last + 1 WHERE tab = ${tab} RETURNING last)
    SELECT last, pg_notify(${CHANGES_CHANNEL}, ${tab} || ':' || last) FROM next`;
  if (row === undefined) throw new Error(`no change counter for ${tab}`);
  return row.last;
}

/** A notification's payload (`tab:number`), or undefined for anything else. */
export function parseChange(payload: string): { tab: ReplicatedTable; change: number } | undefined {
  const match = /^(sessions|api_keys|admins|device_groups|settings):(\d{1,16})$/.exec(payload);
  if (match === null) return undefined;
  return { tab: match[1] as ReplicatedTable, change: Number(match[2]) };
}
