import { afterEach, describe, expect, it } from 'vitest';
import { connectPostgres, type Sql } from '../../../../../lib/store/postgres/connect.ts';
import {
  migratePostgres,
  requireCurrentSchema,
  schemaVersion,
} from '../../../../../lib/store/postgres/migrate.ts';
import { POSTGRES_SCHEMA_VERSION } from '../../../../../lib/store/postgres/schema.ts';
import { usePostgres } from '../../../../harness/postgres.ts';
import { rejection } from '../../../../support/thrown.ts';

describe('PostgreSQL schema migrations (a real PostgreSQL 15)', { timeout: 30_000 }, () => {
  const pg = usePostgres();
  const clients: Sql[] = [];
  const connect = () => {
    const sql = connectPostgres({ url: pg.url, passwordFile: pg.passwordFile }, { applicationName: 'test' });
    clients.push(sql);
    return sql;
  };
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((sql) => sql.end({ timeout: 1 })));
  });

  it('an empty database is at 0; migrate brings it to the current version, once, and says so', async () => {
    const sql = connect();
    expect(await schemaVersion(sql)).toBe(0);
    expect(await migratePostgres(sql)).toEqual({ from: 0, to: POSTGRES_SCHEMA_VERSION });
    expect(await schemaVersion(sql)).toBe(POSTGRES_SCHEMA_VERSION);
    expect(await migratePostgres(sql)).toEqual({
      from: POSTGRES_SCHEMA_VERSION,
      to: POSTGRES_SCHEMA_VERSION,
    });
    const tables = await sql<{ name: string }[]>`
      SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`;
    expect(tables.map((t) => t.name)).toEqual([
      'admin_sessions',
      'admin_users',
      'api_keys',
      'audit_events',
      'changes',
      'device_groups',
      'doorman_schema',
      'session_deletions',
      'sessions',
      'settings',
    ]);
  });

  it('boxes starting together migrate once: every one ends at the current version', async () => {
    const results = await Promise.all([connect(), connect(), connect()].map((sql) => migratePostgres(sql)));
    expect(results.filter((r) => r.from === 0)).toHaveLength(1);
    expect(await schemaVersion(connect())).toBe(POSTGRES_SCHEMA_VERSION);
  });

  it('a newer schema than this Doorman knows is refused (SCHEMA_TOO_NEW), by migrate and by a reader', async () => {
    const sql = connect();
    await migratePostgres(sql);
    await sql`UPDATE doorman_schema SET version = ${POSTGRES_SCHEMA_VERSION + 1}`;
    expect(await rejection(migratePostgres(sql))).toMatchObject({ code: 'SCHEMA_TOO_NEW' });
    expect(await rejection(requireCurrentSchema(sql))).toMatchObject({ code: 'SCHEMA_TOO_NEW' });
  });

  it('a reader of an older schema is told to migrate', async () => {
    expect(await rejection(requireCurrentSchema(connect()))).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: expect.stringContaining('run doorman store migrate'),
    });
  });
});
