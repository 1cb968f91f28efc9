import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { ManualClock } from '../../lib/clock.ts';
import { PgAdmins } from '../../lib/store/postgres/admins.ts';
import { PgApiKeys } from '../../lib/store/postgres/api-keys.ts';
import { PgDeviceGroups } from '../../lib/store/postgres/device-groups.ts';
import { PgDirectorySettings } from '../../lib/store/postgres/directory-settings.ts';
import { PgPortalSettings } from '../../lib/store/postgres/portal-settings.ts';
import { connectPostgres, type Sql } from '../../lib/store/postgres/connect.ts';
import { migratePostgres } from '../../lib/store/postgres/migrate.ts';
import { Replica, type ReplicaOptions } from '../../lib/store/postgres/replica.ts';
import type { ReplicatedTable } from '../../lib/store/postgres/schema.ts';
import { PgSessions } from '../../lib/store/postgres/sessions.ts';
import { auditRecords } from '../../lib/audit/event.ts';
import { shipper } from '../../lib/store/audit-store.ts';
import { pgAudit } from '../../lib/store/postgres/audit.ts';
import { idleGraceMs } from '../../lib/store/session.ts';
import type { AuditRepository } from '../../lib/store/store.ts';
import type { Box, BoxOptions, ContractStore, Site } from '../unit/lib/store/contract/site.ts';
import { pick } from '../support/pick.ts';
import { usePostgres } from './postgres.ts';

/**
 * Sites of boxes on a real PostgreSQL (usePostgres: one cluster a test file, a database a test): each box has
 * its own client and Replica, as each Doorman process would, and the repositories built on them. What the
 * store contract suites (test/unit/lib/store/contract/) run on for PostgreSQL, and what its own tests use.
 */

export interface PgStore extends ContractStore {
  sessions: PgSessions;
  apiKeys: PgApiKeys;
  admins: PgAdmins;
  deviceGroups: PgDeviceGroups;
  portal: PgPortalSettings;
  directory: PgDirectorySettings;
  audit: AuditRepository;
}

export interface PgBox extends Box<PgStore> {
  readonly sql: Sql;
  readonly replica: Replica;
  /** What the replica and the repositories logged. */
  readonly logs: string[];
  /** The directory bind password file of this box's own. */
  readonly passwordFile: string;
}

export interface PgBoxOptions extends BoxOptions {
  /** The replica's poll; default 60 s, so a test sees what notifications alone bring. */
  pollMs?: number;
  /** The replica's staleness log; default its own (10 s). */
  staleLogMs?: number;
  /** The replica's seam between a read and its apply (ReplicaOptions.applying). */
  applying?: ReplicaOptions['applying'];
  /** A session write not committed by then is STORE_UNAVAILABLE; default PgSessions' own. */
  deadlineMs?: number;
  schedule?: (task: () => void, ms: number) => void;
}

export interface PgSite extends Site<PgStore> {
  box(options?: PgBoxOptions): Promise<PgBox>;
  /** A client of the test's own, for what a test checks in the tables themselves. */
  readonly sql: Sql;
}

export function usePgSite(): {
  readonly pg: ReturnType<typeof usePostgres>;
  open(options?: { now?: number }): Promise<PgSite>;
} {
  const pg = usePostgres();
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const connect = (applicationName: string): Sql => {
    const sql = connectPostgres({ url: pg.url, passwordFile: pg.passwordFile }, { applicationName, max: 4 });
    cleanups.push(() => sql.end({ timeout: 1 }));
    return sql;
  };

  const open = async (options: { now?: number } = {}): Promise<PgSite> => {
    const clock = new ManualClock(options.now);
    const sql = connect('doorman-test');
    await migratePostgres(sql);
    const dir = mkdtempSync(join(tmpdir(), 'doorman-pg-site-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    let boxes = 0;

    const box = async (boxOptions: PgBoxOptions = {}): Promise<PgBox> => {
      const name = boxOptions.name ?? `box${++boxes}`;
      const boxSql = connect(`doorman-${name}`);
      const logs: string[] = [];
      const log = boxOptions.log ?? ((line: string) => void logs.push(line));
      const replica = new Replica(boxSql, {
        log,
        clock,
        pollMs: boxOptions.pollMs ?? 60_000,
        ...pick(boxOptions, 'staleLogMs', 'applying'),
      });
      cleanups.push(() => replica.close());
      const schedule = boxOptions.schedule === undefined ? {} : { schedule: boxOptions.schedule };
      const passwordFile = boxOptions.passwordFile ?? join(dir, `${name}-bind-password`);
      const ship = shipper(
        boxOptions.ship === undefined ? undefined : { box: name, ship: boxOptions.ship },
        log,
      );
      const sessions = new PgSessions(boxSql, replica, {
        clock,
        box: name,
        ship,
        idleGraceMs: idleGraceMs(boxOptions.leastIdleSeconds ?? 0),
        ...pick(boxOptions, 'deadlineMs'),
      });
      cleanups.push(() => sessions.drain());
      const store: PgStore = {
        sessions,
        apiKeys: new PgApiKeys(boxSql, replica, clock, { log, ...schedule }),
        admins: new PgAdmins(boxSql, replica, clock, pick(boxOptions, 'sessionTtlMs')),
        deviceGroups: new PgDeviceGroups(boxSql, replica, { clock }),
        portal: new PgPortalSettings(boxSql, replica, {
          clock,
          ...pick(boxOptions, 'leastIdleSeconds', 'directoryApplied'),
        }),
        directory: new PgDirectorySettings(boxSql, replica, { clock, passwordFile }),
        audit: pgAudit(boxSql, (events) => auditRecords(events, clock.now(), name), ship),
      };
      await replica.start();
      return {
        store,
        sql: boxSql,
        replica,
        logs,
        passwordFile,
        sync: () => caughtUpWithAll(sql, replica),
      };
    };
    return { clock, box, sql };
  };
  return { pg, open };
}

/** Until `replica` has applied every table it holds as far as the database has it now. */
export async function caughtUpWithAll(sql: Sql, replica: Replica): Promise<void> {
  const counters = await sql<{ tab: ReplicatedTable; last: number }[]>`SELECT tab, last FROM changes`;
  const held = counters.filter(({ tab }) => replica.applied(tab) >= 0);
  await Promise.all(held.map(({ tab, last }) => replica.caughtUp(tab, last, 2000)));
  const behind = held.filter(({ tab, last }) => replica.applied(tab) < last).map(({ tab }) => tab);
  if (behind.length > 0) throw new Error(`the replica did not catch up with ${behind.join(', ')} in 2 s`);
}
