import type { AuditRecord } from '../../audit/event.ts';
import { actorsNamed, AUDIT_SCAN_ROWS, pageLimit, pageOf, scans } from '../../audit/query.ts';
import { type AuditColumns, toAuditEvent } from '../audit-store.ts';
import type { AuditRepository } from '../store.ts';
import type { Sql, Tx } from './connect.ts';
import { transaction } from './write.ts';

/** Events deleted per transaction by purge. */
const PURGE_CHUNK_ROWS = 2000;

/** Insert audit records in the transaction `tx` (one statement however many). */
export async function insertAudit(tx: Tx, records: readonly AuditRecord[]): Promise<void> {
  if (records.length === 0) return;
  await tx`
    INSERT INTO audit_events (at, box, kind, actor, username, address, detail)
    SELECT at, box, kind, actor, username, address, detail::jsonb FROM unnest(
      ${records.map((r) => r.at)}::bigint[], ${records.map((r) => r.box)}::text[],
      ${records.map((r) => r.kind)}::text[], ${records.map((r) => r.actor)}::text[],
      ${records.map((r) => r.user ?? null)}::text[], ${records.map((r) => r.address ?? null)}::text[],
      ${records.map((r) => JSON.stringify(r.detail))}::text[]
    ) AS t(at, box, kind, actor, username, address, detail)`;
}

/**
 * The audit trail on PostgreSQL: record() in a transaction of its own (admin actions; identity events go in
 * the session write batch, see sessions.ts), list() and purge() straight from the database.
 */
export function pgAudit(
  sql: Sql,
  stamp: (inputs: Parameters<AuditRepository['record']>[0]) => AuditRecord[],
  ship: (records: readonly AuditRecord[]) => void,
): AuditRepository {
  return {
    async record(events) {
      const records = stamp(events);
      await transaction(sql, (tx) => insertAudit(tx, records));
      ship(records);
    },
    async list(query) {
      // As SQLite's (audit-store.ts): by the time index; filtered on more than time, a bounded scan.
      const limit = pageLimit(query.limit);
      const terms = [sql`true`];
      const filters = [sql`true`];
      const { user, address, kind, from, to, before } = query;
      if (user !== undefined)
        filters.push(sql`(username = ${user} OR actor = ANY(${actorsNamed(user)}::text[]))`);
      if (address !== undefined) filters.push(sql`address = ${address}`);
      if (kind !== undefined) filters.push(sql`kind = ${kind}`);
      if (from !== undefined) terms.push(sql`at >= ${from}`);
      if (to !== undefined) terms.push(sql`at < ${to}`);
      if (before !== undefined) terms.push(sql`(at, id) < (${before.at}, ${before.id})`);
      const and = (list: typeof terms) => list.reduce((all, term) => sql`${all} AND ${term}`);
      const where = and(terms);
      if (!scans(query)) {
        const rows = await transaction(
          sql,
          (tx) => tx<AuditColumns[]>`SELECT * FROM audit_events WHERE ${where}
            ORDER BY at DESC, id DESC LIMIT ${limit + 1}`,
        );
        return pageOf(rows.map(toAuditEvent), limit);
      }
      const scanRows = query.scanRows ?? AUDIT_SCAN_ROWS;
      const { rows, end } = await transaction(sql, async (tx) => ({
        rows: await tx<AuditColumns[]>`SELECT * FROM (SELECT * FROM audit_events WHERE ${where}
            ORDER BY at DESC, id DESC LIMIT ${scanRows}) scanned
          WHERE ${and(filters)} ORDER BY at DESC, id DESC LIMIT ${limit + 1}`,
        end: await tx<{ at: string; id: string }[]>`SELECT at, id FROM audit_events WHERE ${where}
          ORDER BY at DESC, id DESC LIMIT 1 OFFSET ${scanRows - 1}`,
      }));
      const [last] = end;
      const scannedTo = last === undefined ? undefined : { at: Number(last.at), id: Number(last.id) };
      return pageOf(rows.map(toAuditEvent), limit, scannedTo);
    },
    async purge(before) {
      let purged = 0;
      for (;;) {
        const n = await transaction(sql, async (tx) => {
          const rows = await tx`DELETE FROM audit_events WHERE id IN (
            SELECT id FROM audit_events WHERE at < ${before} LIMIT ${PURGE_CHUNK_ROWS})`;
          return rows.count;
        });
        purged += n;
        if (n < PURGE_CHUNK_ROWS) return purged;
      }
    },
  };
}
