import type { Statement } from 'better-sqlite3';
import type { AuditEvent, AuditKind, AuditRecord } from '../audit/event.ts';
import {
  AUDIT_SCAN_ROWS,
  type AuditCursor,
  type AuditPage,
  type AuditQuery,
  pageLimit,
  pageOf,
  scans,
} from '../audit/query.ts';
import type { Db } from './database.ts';
import type { AuditOptions } from './store.ts';

/** An audit_events row, as both engines store it (detail as JSON text on SQLite, jsonb on PostgreSQL). */
export interface AuditColumns {
  id: number;
  at: number;
  box: string;
  kind: string;
  actor: string;
  username: string | null;
  address: string | null;
  detail: string | Record<string, unknown>;
}

export const toAuditEvent = (row: AuditColumns): AuditEvent => ({
  id: Number(row.id),
  at: Number(row.at),
  box: row.box,
  kind: row.kind as AuditKind,
  actor: row.actor,
  user: row.username ?? undefined,
  address: row.address ?? undefined,
  detail: typeof row.detail === 'string' ? (JSON.parse(row.detail) as Record<string, unknown>) : row.detail,
});

/**
 * An audit query as SQL with named parameters: `sql` the time and the cursor (answered by the time index),
 * `filters` the rest (user, address, kind), applied to a bounded scan (lib/audit/query.ts AUDIT_SCAN_ROWS).
 * The user filter matches the event's user or who acted (`admin:alice`, `cli:alice`, `api-key:alice`,
 * `user:alice` for alice). PostgreSQL's store builds the same from fragments (postgres/audit.ts).
 */
function whereOf(query: AuditQuery): { sql: string; filters: string; params: Record<string, unknown> } {
  const terms: string[] = [];
  const filters: string[] = [];
  const params: Record<string, unknown> = {};
  const add = (to: string[], term: string, name: string, value: unknown) => {
    to.push(term);
    params[name] = value;
  };
  if (query.user !== undefined) {
    const actors = "actor IN ('admin:' || @user, 'cli:' || @user, 'api-key:' || @user, 'user:' || @user)";
    add(filters, `(username = @user OR ${actors})`, 'user', query.user);
  }
  if (query.address !== undefined) add(filters, 'address = @address', 'address', query.address);
  if (query.kind !== undefined) add(filters, 'kind = @kind', 'kind', query.kind);
  if (query.from !== undefined) add(terms, 'at >= @from', 'from', query.from);
  if (query.to !== undefined) add(terms, 'at < @to', 'to', query.to);
  if (query.before !== undefined) {
    terms.push('(at < @beforeAt OR (at = @beforeAt AND id < @beforeId))');
    params['beforeAt'] = query.before.at;
    params['beforeId'] = query.before.id;
  }
  const where = (list: string[]) => (list.length === 0 ? '' : `WHERE ${list.join(' AND ')}`);
  return { sql: where(terms), filters: where(filters), params };
}

/** The most rows one INSERT writes (a power of two: see AuditStore.insert). */
const INSERT_ROWS_MAX = 64;

/** The audit trail in the session DB (schema 8): inserts run inside the caller's transaction. */
export class AuditStore {
  readonly #db: Db;
  /** INSERTs of 1, 2, 4 … INSERT_ROWS_MAX rows, by row count, prepared on first use. */
  readonly #inserts = new Map<number, Statement>();
  readonly #purge: Statement;

  constructor(db: Db) {
    this.#db = db;
    this.#purge = db.prepare(
      'DELETE FROM audit_events WHERE id IN (SELECT id FROM audit_events WHERE at < @before LIMIT @limit)',
    );
  }

  /**
   * Insert records (in whatever transaction is open), a group commit's at once: multi-row INSERTs of
   * power-of-two sizes, at most log2(INSERT_ROWS_MAX) + 1 statements whatever the count, with positional
   * parameters (binding an object costs more). One statement a row cost a login about 0.8 µs more, measured.
   */
  insert(records: readonly AuditRecord[]): void {
    let from = 0;
    while (from < records.length) {
      let rows = INSERT_ROWS_MAX;
      while (rows > records.length - from) rows >>= 1;
      const values: unknown[] = [];
      for (let i = from; i < from + rows; i++) {
        const r = records[i] as AuditRecord;
        values.push(
          r.at,
          r.box,
          r.kind,
          r.actor,
          r.user ?? null,
          r.address ?? null,
          JSON.stringify(r.detail),
        );
      }
      this.#insertOf(rows).run(values);
      from += rows;
    }
  }

  #insertOf(rows: number): Statement {
    let statement = this.#inserts.get(rows);
    if (statement === undefined) {
      const row = '(?, ?, ?, ?, ?, ?, ?)';
      statement = this.#db.prepare(
        `INSERT INTO audit_events (at, box, kind, actor, username, address, detail)
         VALUES ${Array.from({ length: rows }, () => row).join(', ')}`,
      );
      this.#inserts.set(rows, statement);
    }
    return statement;
  }

  /**
   * A page, newest first, by the time index; filtered on more than time, out of at most AUDIT_SCAN_ROWS rows
   * (see there). The statements are prepared per call: an admin's read.
   */
  list(query: AuditQuery): AuditPage {
    const limit = pageLimit(query.limit);
    const where = whereOf(query);
    const order = 'ORDER BY at DESC, id DESC';
    const params = { ...where.params, limit: limit + 1, scan: query.scanRows ?? AUDIT_SCAN_ROWS };
    if (!scans(query)) {
      const rows = this.#db
        .prepare(`SELECT * FROM audit_events ${where.sql} ${order} LIMIT @limit`)
        .all(params) as AuditColumns[];
      return pageOf(rows.map(toAuditEvent), limit);
    }
    const scanned = `SELECT * FROM audit_events ${where.sql} ${order} LIMIT @scan`;
    const rows = this.#db
      .prepare(`SELECT * FROM (${scanned}) ${where.filters} ${order} LIMIT @limit`)
      .all(params) as AuditColumns[];
    const end = this.#db
      .prepare(`SELECT at, id FROM audit_events ${where.sql} ${order} LIMIT 1 OFFSET @scan - 1`)
      .get(params) as AuditCursor | undefined;
    return pageOf(rows.map(toAuditEvent), limit, end);
  }

  /** Delete events older than `before` (ms), at most `limit`; how many. */
  purge(before: number, limit: number): number {
    return this.#purge.run({ before, limit }).changes;
  }
}

/** Hands committed records to the sink, never throwing into the write that made them. */
export function shipper(options: AuditOptions | undefined, log: (line: string) => void) {
  return (records: readonly AuditRecord[]): void => {
    if (records.length === 0 || options?.ship === undefined) return;
    try {
      options.ship(records);
    } catch (error) {
      log(`audit: shipping events failed: ${(error as Error).message}`);
    }
  };
}
