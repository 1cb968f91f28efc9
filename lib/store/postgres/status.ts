import { unreachable, type StoreReport } from '../store-report.ts';
import type { Sql } from './connect.ts';
import { schemaVersion } from './migrate.ts';
import { POSTGRES_SCHEMA_VERSION, type ReplicatedTable } from './schema.ts';

/**
 * The PostgreSQL store's report (`doorman store status`), read through `sql`, which it leaves open; as of `now`
 * (ms), for the live sessions. Read-only: nothing is migrated or written. Any failure, connecting included, is
 * a report of a store not connected, with the client's message (it never holds the password).
 */
export async function postgresReport(sql: Sql, location: string, now: number): Promise<StoreReport> {
  try {
    const version = await schemaVersion(sql);
    // pg_last_xact_replay_timestamp(): the commit time, on the primary, of the last transaction a standby
    // replayed; on a quiet site it grows between writes even when the standby is caught up.
    const [server] = await sql<
      { standby: boolean; lag_ms: number | null; addr: string | null; port: number | null }[]
    >`
      SELECT pg_is_in_recovery() AS standby,
        CASE WHEN pg_is_in_recovery()
          THEN (extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000)::bigint END AS lag_ms,
        host(inet_server_addr()) AS addr, inet_server_port() AS port`;
    let changes: StoreReport['changes'] = null;
    let sessions: StoreReport['sessions'] = null;
    if (version >= 1) {
      const counters = await sql<{ tab: ReplicatedTable; last: number }[]>`SELECT tab, last FROM changes`;
      const last = new Map(counters.map((c) => [c.tab, c.last]));
      const at = (tab: ReplicatedTable) => last.get(tab) ?? 0;
      changes = {
        sessions: at('sessions'),
        api_keys: at('api_keys'),
        admins: at('admins'),
        device_groups: at('device_groups'),
        settings: at('settings'),
      };
      const [counted] = await sql<{ rows: number; live: number }[]>`
        SELECT count(*) AS rows,
          count(*) FILTER (WHERE expires_at IS NULL OR expires_at > ${now}) AS live FROM sessions`;
      sessions = counted ?? null;
    }
    return {
      engine: 'postgres',
      location,
      connected: true,
      error: null,
      schemaVersion: version,
      expectedSchemaVersion: POSTGRES_SCHEMA_VERSION,
      server:
        server?.addr === null || server?.addr === undefined
          ? null
          : `${server.addr.includes(':') ? `[${server.addr}]` : server.addr}:${server.port}`,
      role: server === undefined ? null : server.standby ? 'standby' : 'primary',
      replicationLagMs: server?.lag_ms ?? null,
      changes,
      sessions,
    };
  } catch (error) {
    return unreachable('postgres', location, POSTGRES_SCHEMA_VERSION, (error as Error).message);
  }
}
