import { hostname } from 'node:os';
import { auditRecords } from '../../audit/event.ts';
import { systemClock, type Clock } from '../../clock.ts';
import { DoormanError } from '../../errors.ts';
import type { Log } from '../../log.ts';
import { idleGraceMs } from '../session.ts';
import type { AuditOptions, Store, StoreStatus } from '../store.ts';
import { shipper } from '../audit-store.ts';
import { pgAudit } from './audit.ts';
import { PgAdmins } from './admins.ts';
import { PgApiKeys } from './api-keys.ts';
import { connectPostgres, showUrl, type PostgresSettings, type Sql } from './connect.ts';
import { PgDeviceGroups } from './device-groups.ts';
import { PgDirectorySettings } from './directory-settings.ts';
import { migratePostgres, requireCurrentSchema } from './migrate.ts';
import { PgPortalSettings } from './portal-settings.ts';
import { Replica } from './replica.ts';
import { postgresReport } from './status.ts';
import { PgSessions } from './sessions.ts';

/** One process's way to the shared database: its client, and its replica of the tables. */
export interface PostgresBox {
  readonly sql: Sql;
  readonly replica: Replica;
  /** End the replica, then the client (its connections end within `graceMs`). */
  close(graceMs?: number): Promise<void>;
}

export interface PostgresBoxOptions {
  /** Shown in pg_stat_activity: doorman-serve, doorman-authd, doorman-cli. */
  applicationName: string;
  log: Log;
  clock?: Clock;
  /** Connections in the pool (LISTEN takes one more of its own). */
  max?: number;
}

export function postgresBox(settings: PostgresSettings, options: PostgresBoxOptions): PostgresBox {
  const sql = connectPostgres(settings, {
    applicationName: options.applicationName,
    log: options.log,
    ...(options.max === undefined ? {} : { max: options.max }),
  });
  const replica = new Replica(sql, { log: options.log, clock: options.clock ?? systemClock });
  return {
    sql,
    replica,
    async close(graceMs = 2000) {
      await replica.close();
      await sql.end({ timeout: graceMs / 1000 });
    },
  };
}

export interface PostgresStoreOptions extends PostgresBoxOptions {
  /** The directory's bind password: a file of each box's own, never in the database. */
  passwordFile: string;
  /** The shortest idle timeout a portal save may set (config/schema.ts leastIdleSeconds). */
  leastIdleSeconds: number;
  /**
   * Bring the schema up to date first (serve and the CLI, as they migrate SQLite); otherwise a schema other
   * than this Doorman's is refused (SCHEMA_TOO_NEW, or "run doorman store migrate").
   */
  migrate: boolean;
  /** The audit trail's box name and sink; default os.hostname() and none. */
  audit?: AuditOptions;
}

/**
 * The shared store on PostgreSQL (a site of several boxes): every repository on one client and one replica,
 * loaded before it is returned, so the first request is answered from a full copy. Rejects when PostgreSQL
 * cannot be reached now (serve answers 503 and tries again, see lib/open-on-demand.ts).
 */
export async function openPostgresStore(
  settings: PostgresSettings,
  options: PostgresStoreOptions,
): Promise<Store> {
  const clock = options.clock ?? systemClock;
  const box = postgresBox(settings, options);
  try {
    if (options.migrate) await migratePostgres(box.sql);
    else await requireCurrentSchema(box.sql);
    const { sql, replica } = box;
    const boxName = options.audit?.box ?? hostname();
    const ship = shipper(options.audit, options.log);
    const sessions = new PgSessions(sql, replica, {
      clock,
      box: boxName,
      ship,
      idleGraceMs: idleGraceMs(options.leastIdleSeconds),
    });
    const directory = new PgDirectorySettings(sql, replica, { passwordFile: options.passwordFile, clock });
    const store: Store = {
      engine: 'postgres',
      sessions,
      apiKeys: new PgApiKeys(sql, replica, clock, { log: options.log }),
      admins: new PgAdmins(sql, replica, clock),
      deviceGroups: new PgDeviceGroups(sql, replica, { clock }),
      // Whether a directory is applied is read inside the save's transaction (the row, not this box's file).
      portal: new PgPortalSettings(sql, replica, { clock, leastIdleSeconds: options.leastIdleSeconds }),
      directory,
      audit: pgAudit(sql, (events) => auditRecords(events, clock.now(), boxName), ship),
      // `doorman store status`'s report of the database, with this process's own staleness beside it.
      status: async (): Promise<StoreStatus> => {
        const stale = replica.staleMs();
        const report = await postgresReport(sql, showUrl(settings.url), clock.now());
        return {
          engine: 'postgres',
          location: report.location,
          schemaVersion: report.schemaVersion ?? undefined,
          connected: report.connected,
          ...(stale === undefined ? {} : { staleMs: stale }),
          ...(report.connected ? { replicationLagMs: report.replicationLagMs ?? 0 } : {}),
        };
      },
      close: async () => {
        // What was asked for is written first (within the write deadline), then the connections end.
        await sessions.drain();
        await box.close();
      },
    };
    await replica.start();
    return store;
  } catch (error) {
    await box.close(0).catch(() => undefined);
    if (error instanceof DoormanError) throw error;
    throw new DoormanError(
      'STORE_UNAVAILABLE',
      `PostgreSQL store ${showUrl(settings.url)}: ${(error as Error).message}`,
      { cause: error },
    );
  }
}
