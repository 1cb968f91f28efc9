import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { SCHEMA_VERSION } from './migrations.ts';
import type { ReplicatedTable } from './postgres/schema.ts';
import type { StoreEngine } from './store.ts';

/**
 * What `doorman store status` says about the store a box is configured for. Every key is always there (null
 * when it does not apply or cannot be known now), so a script reading the JSON form needs no special cases.
 */
export interface StoreReport {
  engine: StoreEngine;
  /** The DB file, or the PostgreSQL URL as showUrl shows it (never a password). */
  location: string;
  connected: boolean;
  /** Why it is not connected. */
  error: string | null;
  /** The schema the store is at (0: empty), null when not connected. */
  schemaVersion: number | null;
  /** The schema this Doorman works with. */
  expectedSchemaVersion: number;
  /** PostgreSQL over TCP: the address and port of the server answering (one of the URL's hosts). */
  server: string | null;
  /** PostgreSQL: whether that server is the primary or a standby in recovery. */
  role: 'primary' | 'standby' | null;
  /** A standby: how long ago the last transaction it replayed was committed on the primary, ms. */
  replicationLagMs: number | null;
  /** PostgreSQL: the last change number of each shared table. */
  changes: Record<ReplicatedTable, number> | null;
  /** The sessions table's rows, and how many of them are before their hard expiry. */
  sessions: { rows: number; live: number } | null;
}

/** A report of a store that cannot be reached, or before anything is known. */
export function unreachable(
  engine: StoreEngine,
  location: string,
  expectedSchemaVersion: number,
  error: string,
): StoreReport {
  return {
    engine,
    location,
    connected: false,
    error,
    schemaVersion: null,
    expectedSchemaVersion,
    server: null,
    role: null,
    replicationLagMs: null,
    changes: null,
    sessions: null,
  };
}

/**
 * The SQLite store's report, read without changing anything: the file is opened read-only and never migrated
 * (status must not be what upgrades it). As of `now` (ms), for the live count.
 */
export function sqliteReport(path: string, now: number): StoreReport {
  if (!existsSync(path))
    return unreachable('sqlite', path, SCHEMA_VERSION, 'no session DB there yet (doorman serve makes it)');
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (error) {
    return unreachable('sqlite', path, SCHEMA_VERSION, (error as Error).message);
  }
  try {
    const version = db.pragma('user_version', { simple: true }) as number;
    const hasSessions =
      db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'sessions'").get() !==
      undefined;
    const sessions = hasSessions
      ? (db
          .prepare<[number], { rows: number; live: number }>(
            `SELECT count(*) AS rows,
              count(*) FILTER (WHERE expires_at IS NULL OR expires_at > ?) AS live FROM sessions`,
          )
          .get(now) ?? null)
      : null;
    return {
      ...unreachable('sqlite', path, SCHEMA_VERSION, ''),
      connected: true,
      error: null,
      schemaVersion: version,
      sessions,
    };
  } catch (error) {
    return unreachable('sqlite', path, SCHEMA_VERSION, (error as Error).message);
  } finally {
    db.close();
  }
}
