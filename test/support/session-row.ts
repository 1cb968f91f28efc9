import type { SessionRow } from '../../lib/store/postgres/session-table.ts';

/** A sessions row as PostgreSQL gives it (alice on 10.0.0.5, id 1, change 1), with `over` in place. */
export const sessionRow = (over: Partial<SessionRow> = {}): SessionRow => ({
  id: 1,
  key_kind: 'ip',
  key: '10.0.0.5',
  username: 'alice',
  source: 'api',
  created_at: 1000,
  last_seen: 1000,
  expires_at: null,
  idle_timeout: null,
  mac: null,
  change: 1,
  ...over,
});
