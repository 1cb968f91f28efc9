import type { AuditRecord } from '../../lib/audit/event.ts';
import { pagesOf, type StoredPage } from '../../lib/audit/pages.ts';

/** The audit pages' tests' trail: records as the store stamps them, and pages as the SQLite store keeps them. */

export const T0 = Date.UTC(2026, 0, 1);

export const record = (at: number, user: string, extra: Partial<AuditRecord> = {}): AuditRecord => ({
  at,
  box: 'proxy1',
  kind: 'api.login',
  actor: 'api-key:wifi',
  user,
  address: '10.0.0.1',
  detail: {},
  ...extra,
});

/** Stored as the SQLite store stores them: ids from 1, in the order written. */
export function store(commits: AuditRecord[][]): Array<StoredPage & { atFirst: number; atLast: number }> {
  return commits.flatMap(pagesOf).map((page, i) => ({ ...page, id: i + 1 }));
}
