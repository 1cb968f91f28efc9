import type { Statement } from 'better-sqlite3';
import type { AuditEvent, AuditKind, AuditRecord } from '../audit/event.ts';
import { PageCollector } from '../audit/page-collector.ts';
import { PAGE_SPAN_MS, pagesOf, type StoredPage } from '../audit/pages.ts';
import { AUDIT_SCAN_ROWS, type AuditPage, type AuditQuery } from '../audit/query.ts';
import type { Db } from './database.ts';
import type { AuditOptions } from './store.ts';

/**
 * An audit_events row: PostgreSQL's table, SQLite's view of its pages (detail as JSON text there, jsonb on
 * PostgreSQL).
 */
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
 * The audit trail in the session DB, in pages (schema 9, lib/audit/pages.ts): inserts run in the caller's
 * transaction.
 */
export class AuditStore {
  readonly #insert: Statement<[number, number, string, string]>;
  readonly #pages: Statement<[number, number, number], StoredPage & { at_last: number }>;
  readonly #purge: Statement<[number, number], { events: number }>;

  constructor(db: Db) {
    this.#insert = db.prepare('INSERT INTO audit_pages (at_first, at_last, box, events) VALUES (?, ?, ?, ?)');
    // Newest first by the time index (at_last, and the id it holds: no sort).
    this.#pages = db.prepare(`SELECT id, at_first AS atFirst, at_last, box, events FROM audit_pages
      WHERE at_last < ? AND at_first < ? AND at_last >= ? ORDER BY at_last DESC, id DESC`);
    this.#purge = db.prepare(`DELETE FROM audit_pages WHERE id IN
      (SELECT id FROM audit_pages WHERE at_last < ? LIMIT ?) RETURNING json_array_length(events) - 1 AS events`);
  }

  /** Insert a group commit's records (in whatever transaction is open): a page each PAGE_EVENTS, usually one. */
  insert(records: readonly AuditRecord[]): void {
    for (const page of pagesOf(records)) this.#insert.run(page.atFirst, page.atLast, page.box, page.events);
  }

  /**
   * A page of the screen, newest first: the stored pages read newest first while the collector wants them
   * (see PageCollector: a filtered query reads at most about AUDIT_SCAN_ROWS events).
   */
  list(query: AuditQuery): AuditPage {
    const collector = new PageCollector(query, query.scanRows ?? AUDIT_SCAN_ROWS);
    const below = PageCollector.below(query);
    for (const page of this.#pages.iterate(below + PAGE_SPAN_MS, below, query.from ?? 0)) {
      if (!collector.wants(page.at_last, page.id)) break;
      collector.add(page);
    }
    return collector.result();
  }

  /**
   * Delete the pages whose every event is older than `before` (ms), at most `limit` pages; the pages and
   * events deleted. An event is kept at most PAGE_SPAN_MS longer than asked, with its page's newest.
   */
  purge(before: number, limit: number): { pages: number; events: number } {
    const deleted = this.#purge.all(before, limit);
    return { pages: deleted.length, events: deleted.reduce((sum, page) => sum + page.events, 0) };
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
