/**
 * The PostgreSQL of the several-proxies bench: the test harness's throwaway PostgreSQL 15 (startPostgres: on
 * loopback, a port of its own, the `doorman` role by password over TCP), one database migrated by Doorman's
 * own migrations, and a preload of sessions by COPY that gives them a change number as a write would.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { takeChange } from '../../lib/store/postgres/changes.ts';
import { connectPostgres, type PostgresSettings, type Sql } from '../../lib/store/postgres/connect.ts';
import { migratePostgres } from '../../lib/store/postgres/migrate.ts';
import { lookupUser } from '../../lib/system/service-user.ts';
import { startPostgres, type Postgres } from '../../test/harness/postgres.ts';
import { benchKey, benchUser } from './figures.ts';

export interface BenchPostgres {
  readonly server: Postgres;
  /** For the bench's own processes (root): the password in a 0600 file of root's. */
  readonly settings: PostgresSettings;
  /** What a box's config.store holds: the password in a 0600 file of the service user's (authd reads it). */
  readonly serviceSettings: PostgresSettings;
  /** A client of the bench's own (preload, counts, VACUUM). */
  readonly sql: Sql;
  /** Stop the server, remove its data and the password file. */
  destroy(): Promise<void>;
}

/** A fresh cluster and database `doorman`, migrated; the password file owned by `serviceUser` (authd's). */
export async function startBenchPostgres(serviceUser: string): Promise<BenchPostgres> {
  const server = await startPostgres();
  const dir = mkdtempSync(join(tmpdir(), 'doorman-bench-pgpw-'));
  try {
    server.createDatabase('doorman');
    // A password file is read only by its owner (connect.ts): one for the bench (root), one for authd, which
    // reads it after giving up root (the service user's, in a directory it can reach).
    const passwordFile = join(dir, 'password');
    writeFileSync(passwordFile, `${server.password}\n`, { mode: 0o600 });
    const serviceDir = join(dir, 'service');
    mkdirSync(serviceDir, { mode: 0o700 });
    const servicePasswordFile = join(serviceDir, 'password');
    writeFileSync(servicePasswordFile, `${server.password}\n`, { mode: 0o600 });
    const { uid, gid } = lookupUser(serviceUser);
    chmodSync(dir, 0o711);
    chownSync(serviceDir, uid, gid);
    chownSync(servicePasswordFile, uid, gid);
    const settings = { url: server.url('doorman'), passwordFile };
    const serviceSettings = { url: server.url('doorman'), passwordFile: servicePasswordFile };
    const sql = connectPostgres(settings, { applicationName: 'doorman-bench', max: 2 });
    await migratePostgres(sql);
    return {
      server,
      settings,
      serviceSettings,
      sql,
      destroy: async () => {
        await sql.end({ timeout: 2 });
        await server.destroy();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await server.destroy();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

const COPY_ROWS_PER_CHUNK = 10_000;

/**
 * `count` live sessions on the keys benchKey(0..count-1) (user benchUser(i), source api, no expiry), written by
 * COPY in one transaction that takes one sessions change number and stamps every row with it, as a write of
 * the store would (and announces it); then VACUUM ANALYZE, as a database that has been running a while would
 * be. Returns the time of the COPY and of the VACUUM, ms.
 */
export async function preloadSessions(
  sql: Sql,
  count: number,
  now = Date.now(),
): Promise<{ copyMs: number; vacuumMs: number; change: number }> {
  const started = performance.now();
  const change = await sql.begin(async (tx) => {
    // A million rows may take longer than a write's statement_timeout (connect.ts) on a busy machine; a COPY
    // cancelled half way would leave the pipeline below waiting for ever.
    await tx`SET LOCAL statement_timeout = 0`;
    const change = await takeChange(tx, 'sessions');
    const copy = await tx`COPY sessions (key_kind, key, username, source, created_at, last_seen, change)
      FROM STDIN`.writable();
    function* lines(): Generator<string> {
      for (let first = 0; first < count; first += COPY_ROWS_PER_CHUNK) {
        let chunk = '';
        for (let i = first; i < Math.min(count, first + COPY_ROWS_PER_CHUNK); i++) {
          chunk += `ip\t${benchKey(i)}\t${benchUser(i)}\tapi\t${now}\t${now}\t${change}\n`;
        }
        yield chunk;
      }
    }
    await pipeline(Readable.from(lines()), copy);
    return change;
  });
  const copied = performance.now();
  await sql`VACUUM ANALYZE sessions`;
  return {
    copyMs: Math.round(copied - started),
    vacuumMs: Math.round(performance.now() - copied),
    change,
  };
}
