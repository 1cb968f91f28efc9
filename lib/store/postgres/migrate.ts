import { DoormanError } from '../../errors.ts';
import type { Sql } from './connect.ts';
import { POSTGRES_SCHEMA_VERSION, postgresMigrations } from './schema.ts';

/** Any fixed number: boxes that start together migrate one after the other, and once. */
const MIGRATION_LOCK = 0x646f6f72; // "door"

/** The schema version the database is at: 0 for an empty database. */
export async function schemaVersion(sql: Sql): Promise<number> {
  const [table] = await sql<
    { exists: boolean }[]
  >`SELECT to_regclass('doorman_schema') IS NOT NULL AS exists`;
  if (!table?.exists) return 0;
  const [row] = await sql<{ version: number }[]>`SELECT version FROM doorman_schema`;
  return row?.version ?? 0;
}

const tooNew = (found: number) =>
  new DoormanError(
    'SCHEMA_TOO_NEW',
    `PostgreSQL store schema ${found} is newer than this Doorman (${POSTGRES_SCHEMA_VERSION}): upgrade Doorman`,
  );

/**
 * Bring the schema up to date in one transaction (PostgreSQL's DDL is transactional: a failed migration leaves
 * nothing half done), under an advisory lock. Returns the version it was at and the one it is at now.
 */
export async function migratePostgres(sql: Sql): Promise<{ from: number; to: number }> {
  return sql.begin(async (tx) => {
    // A migration may rewrite a big table, and waits for another box's: no statement_timeout (connect.ts) here.
    await tx`SELECT set_config('statement_timeout', '0', true)`;
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`;
    await tx`CREATE TABLE IF NOT EXISTS doorman_schema (
      one      boolean PRIMARY KEY DEFAULT true CHECK (one),
      version  integer NOT NULL
    )`;
    const [row] = await tx<{ version: number }[]>`SELECT version FROM doorman_schema`;
    const from = row?.version ?? 0;
    if (from > POSTGRES_SCHEMA_VERSION) throw tooNew(from);
    for (let v = from; v < POSTGRES_SCHEMA_VERSION; v++) await tx.unsafe(postgresMigrations[v] ?? '');
    await tx`INSERT INTO doorman_schema (version) VALUES (${POSTGRES_SCHEMA_VERSION})
      ON CONFLICT (one) DO UPDATE SET version = excluded.version`;
    return { from, to: POSTGRES_SCHEMA_VERSION };
  });
}

/** For a process that must not migrate (authd, helpers): refuse a schema it does not know. */
export async function requireCurrentSchema(sql: Sql): Promise<void> {
  const found = await schemaVersion(sql);
  if (found > POSTGRES_SCHEMA_VERSION) throw tooNew(found);
  if (found < POSTGRES_SCHEMA_VERSION)
    throw new DoormanError(
      'STORE_UNAVAILABLE',
      `PostgreSQL store is at schema ${found}, needs ${POSTGRES_SCHEMA_VERSION}: run doorman store migrate`,
    );
}
