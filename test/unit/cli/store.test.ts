import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../cli/command.ts';
import { reportLines, runStore } from '../../../cli/commands/store.ts';
import { ManualClock } from '../../../lib/clock.ts';
import { AuditStore } from '../../../lib/store/audit-store.ts';
import { openDatabase } from '../../../lib/store/database.ts';
import { SCHEMA_VERSION } from '../../../lib/store/migrations.ts';
import { POSTGRES_SCHEMA_VERSION } from '../../../lib/store/postgres/schema.ts';
import { SessionStore } from '../../../lib/store/session-store.ts';
import { unreachable } from '../../../lib/store/store-report.ts';
import { freePort } from '../../harness/processes.ts';
import { usePostgres } from '../../harness/postgres.ts';
import { useTempDir } from '../../support/temp-dir.ts';
import { rejection } from '../../support/thrown.ts';

const T0 = Date.UTC(2026, 2, 1, 9);

/**
 * `doorman store` run in this process, its output collected. The configs name root as the service user, so
 * the command's switch to the service user (it runs as root here) is made and changes nothing.
 */
const tmp = useTempDir('doorman-cli-store-');

function config(store?: object): string {
  return tmp.write(
    'doorman.json',
    JSON.stringify({
      stateDir: join(tmp.dir, 'state'),
      serviceUser: 'root',
      ...(store === undefined ? {} : { store }),
    }),
  );
}

async function store(...argv: string[]): Promise<{ code: number; lines: string[] }> {
  const lines: string[] = [];
  const code = await runStore(argv, { out: (line) => lines.push(line), clock: new ManualClock(T0) });
  return { code, lines };
}

const usage = async (...argv: string[]) => {
  const error = await rejection(store(...argv));
  expect(error).toBeInstanceOf(UsageError);
  return (error as Error).message;
};

describe('doorman store: command line', () => {
  it('is a command of bin/doorman: a usage error exits 2, a store not reached 1', () => {
    const doorman = (...argv: string[]) =>
      spawnSync(join(import.meta.dirname, '../../../bin/doorman'), ['store', ...argv], { encoding: 'utf8' });
    const wrong = doorman('stats');
    expect([wrong.status, wrong.stdout, wrong.stderr]).toEqual([
      2,
      '',
      'doorman: store: expected status, migrate or copy, got "stats"\nRun "doorman --help".\n',
    ]);
    const away = doorman('status', '--config', config());
    expect(away.status).toBe(1);
    expect(away.stdout).toMatch(/^engine: {5}SQLite\n.*\nconnected: {2}no: /s);
  });

  it('--help prints the usage', async () => {
    const { code, lines } = await store('--help');
    expect(code).toBe(0);
    expect(lines[0]).toMatch(/^Usage: doorman store status \[--json\]\n {7}doorman store migrate\n/);
  });

  it('names the actions, and refuses an option of another action', async () => {
    expect(await usage()).toBe('store: expected status, migrate or copy, got nothing');
    expect(await usage('stats')).toBe('store: expected status, migrate or copy, got "stats"');
    expect(await usage('status', 'extra')).toBe('unexpected argument "extra"');
    expect(await usage('status', '--to', 'postgres://db/doorman')).toBe(
      'store status: --to is an option of "store copy"',
    );
    expect(await usage('migrate', '--replace')).toBe('store migrate: --replace is an option of "store copy"');
    expect(await usage('copy', '--json', '--to', 'postgres://db/doorman')).toBe(
      'store copy: --json is an option of "store status"',
    );
    expect(await usage('status', '--bogus')).toMatch(/bogus/);
  });

  it('copy needs --to, a PostgreSQL URL without a password (never shown back), an absolute --password-file', async () => {
    expect(await usage('copy')).toBe('store copy: --to URL is required');
    const withPassword = await usage('copy', '--to', 'postgres://doorman:s3cret@db/doorman');
    expect(withPassword).toBe(
      'store copy: --to: must not hold a password: put it in store.passwordFile (0600) or PGPASSWORD (an @ after the hosts is written %40)',
    );
    expect(await usage('copy', '--to', 'mysql://db/doorman')).toBe(
      'store copy: --to: must start with postgres:// or postgresql://',
    );
    expect(await usage('copy', '--to', 'postgres://db/doorman', '--password-file', 'pw')).toBe(
      'store copy: --password-file: must be an absolute path',
    );
  });
});

describe('doorman store on SQLite', () => {
  const dbFile = () => join(tmp.dir, 'state', 'doorman.db');

  it('status before there is a DB: not connected, exit 1, nothing made', async () => {
    const { code, lines } = await store('status', '--config', config());
    expect(code).toBe(1);
    expect(lines).toEqual([
      'engine:     SQLite',
      `where:      ${dbFile()}`,
      'connected:  no: no session DB there yet (doorman serve makes it)',
      `schema:     unknown (this Doorman: ${SCHEMA_VERSION})`,
    ]);
    expect(existsSync(dbFile())).toBe(false);
  });

  it('migrate makes or upgrades the DB and says from what; then status counts the sessions', async () => {
    const file = config();
    expect((await store('migrate', '--config', file)).lines).toEqual([
      `session DB ${dbFile()}: schema 0 → ${SCHEMA_VERSION}`,
    ]);
    expect((await store('migrate', '--config', file)).lines).toEqual([
      `session DB ${dbFile()}: schema ${SCHEMA_VERSION} (current)`,
    ]);
    const db = openDatabase(dbFile());
    const sessions = new SessionStore(db, new ManualClock(T0 - 60_000));
    sessions.start({ key: { kind: 'ip', value: '10.0.0.5' }, username: 'alice', source: 'api' });
    sessions.start({ key: { kind: 'ip', value: '10.0.0.6' }, username: 'bob', source: 'api', expiresAt: T0 });
    db.close();

    const { code, lines } = await store('status', '--config', file);
    expect(code).toBe(0);
    expect(lines).toEqual([
      'engine:     SQLite',
      `where:      ${dbFile()}`,
      'connected:  yes',
      `schema:     ${SCHEMA_VERSION} (current)`,
      'sessions:   2 rows, 1 before their hard expiry',
    ]);
    const json = await store('status', '--json', '--config', file);
    expect(json.code).toBe(0);
    expect(json.lines).toHaveLength(1);
    expect(JSON.parse(json.lines[0] ?? '')).toEqual({
      engine: 'sqlite',
      location: dbFile(),
      connected: true,
      error: null,
      schemaVersion: SCHEMA_VERSION,
      expectedSchemaVersion: SCHEMA_VERSION,
      server: null,
      role: null,
      replicationLagMs: null,
      changes: null,
      sessions: { rows: 2, live: 1 },
    });
  });

  it('status says a DB older than this Doorman needs migrating, and does not migrate it', async () => {
    const file = config();
    await store('migrate', '--config', file);
    const db = openDatabase(dbFile());
    db.pragma('user_version = 5');
    db.close();
    expect((await store('status', '--config', file)).lines[3]).toBe(
      `schema:     5, this Doorman needs ${SCHEMA_VERSION}: doorman store migrate`,
    );
    const after = new Database(dbFile(), { readonly: true });
    expect(after.pragma('user_version', { simple: true })).toBe(5);
    after.close();
  });
});

describe('doorman store on PostgreSQL (a real PostgreSQL 15)', { timeout: 60_000 }, () => {
  const pg = usePostgres();
  const pgConfig = () => config({ kind: 'postgres', url: pg.url, passwordFile: pg.passwordFile });

  it('status of a database never migrated, migrate, then status: the server, its role, the counters', async () => {
    const file = pgConfig();
    const before = await store('status', '--config', file);
    expect(before.code).toBe(0);
    expect(before.lines).toEqual([
      'engine:     PostgreSQL',
      `where:      ${pg.url}`,
      'connected:  yes',
      `schema:     0, this Doorman needs ${POSTGRES_SCHEMA_VERSION}: doorman store migrate`,
      `server:     127.0.0.1:${pg.server.port}`,
      'role:       primary',
    ]);
    expect((await store('migrate', '--config', file)).lines).toEqual([
      `PostgreSQL ${pg.url}: schema 0 → ${POSTGRES_SCHEMA_VERSION}`,
    ]);
    expect((await store('migrate', '--config', file)).lines).toEqual([
      `PostgreSQL ${pg.url}: schema ${POSTGRES_SCHEMA_VERSION} (current)`,
    ]);
    pg.server.psql(
      `INSERT INTO sessions (key_kind, key, username, source, created_at, last_seen, expires_at, change)
       VALUES ('ip', '10.0.0.5', 'alice', 'api', 1, 1, NULL, 1), ('ip', '10.0.0.6', 'bob', 'api', 1, 1, ${T0}, 1);
       UPDATE changes SET last = 1 WHERE tab = 'sessions'; UPDATE changes SET last = 4 WHERE tab = 'settings'`,
      pg.url.split('/').at(-1),
    );

    const { code, lines } = await store('status', '--config', file);
    expect(code).toBe(0);
    expect(lines).toEqual([
      'engine:          PostgreSQL',
      `where:           ${pg.url}`,
      'connected:       yes',
      `schema:          ${POSTGRES_SCHEMA_VERSION} (current)`,
      `server:          127.0.0.1:${pg.server.port}`,
      'role:            primary',
      'change numbers:  sessions 1, api_keys 0, admins 0, device_groups 0, settings 4',
      'sessions:        2 rows, 1 before their hard expiry',
    ]);
    const json = JSON.parse((await store('status', '--json', '--config', file)).lines[0] ?? '');
    expect(json).toEqual({
      engine: 'postgres',
      location: pg.url,
      connected: true,
      error: null,
      schemaVersion: POSTGRES_SCHEMA_VERSION,
      expectedSchemaVersion: POSTGRES_SCHEMA_VERSION,
      server: `127.0.0.1:${pg.server.port}`,
      role: 'primary',
      replicationLagMs: null,
      changes: { sessions: 1, api_keys: 0, admins: 0, device_groups: 0, settings: 4 },
      sessions: { rows: 2, live: 1 },
    });
  });

  it('status of a server that does not answer: not connected, why, exit 1; migrate fails naming the URL', async () => {
    const port = await freePort('127.0.0.1', []);
    const url = `postgres://doorman@127.0.0.1:${port}/doorman`;
    const file = config({ kind: 'postgres', url, passwordFile: pg.passwordFile });
    const { code, lines } = await store('status', '--config', file);
    expect(code).toBe(1);
    expect(lines.slice(0, 2)).toEqual(['engine:     PostgreSQL', `where:      ${url}`]);
    expect(lines[2]).toMatch(/^connected: {2}no: .*ECONNREFUSED/);
    expect(lines).toHaveLength(4);
    const json = JSON.parse((await store('status', '--json', '--config', file)).lines[0] ?? '');
    expect(json).toMatchObject({
      connected: false,
      schemaVersion: null,
      error: expect.stringMatching(/ECONNREFUSED/),
    });
    expect(await rejection(store('migrate', '--config', file))).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: expect.stringMatching(new RegExp(`^PostgreSQL ${url}: .*ECONNREFUSED`)),
    });
  });

  it('copy: says what it copied per table; again refused; with --replace, what it replaced', async () => {
    const file = config();
    await store('migrate', '--config', file);
    const db = openDatabase(join(tmp.dir, 'state', 'doorman.db'));
    const sessions = new SessionStore(db, new ManualClock(T0 - 60_000));
    sessions.start({ key: { kind: 'ip', value: '10.0.0.5' }, username: 'alice', source: 'api' });
    sessions.start({ key: { kind: 'ip', value: '10.0.0.6' }, username: 'bob', source: 'api', expiresAt: T0 });
    db.prepare(`INSERT INTO settings (name, value, updated_at) VALUES ('seamless', '{}', 1)`).run();
    new AuditStore(db).insert([
      {
        at: T0 - 1,
        box: 'proxy1',
        kind: 'admin.created',
        actor: 'cli:root',
        user: undefined,
        address: undefined,
        detail: { name: 'root' },
      },
    ]);
    db.close();
    const copy = ['copy', '--to', pg.url, '--password-file', pg.passwordFile, '--config', file];

    const first = await store(...copy);
    expect(first.code).toBe(0);
    expect(first.lines).toEqual([
      `PostgreSQL ${pg.url}: schema 0 → ${POSTGRES_SCHEMA_VERSION}`,
      `copied from ${join(tmp.dir, 'state', 'doorman.db')}:`,
      '  sessions        1 (1 past their hard expiry left out)',
      '  api_keys        0',
      '  admin_users     0',
      '  admin_sessions  0',
      '  device_groups   0',
      '  settings        0 (seamless stays on this box)',
      '  audit_events    1',
    ]);
    expect(await rejection(store(...copy))).toMatchObject({
      code: 'CONFLICT',
      message:
        'the PostgreSQL store already holds sessions (1), audit_events (1): nothing copied (--replace empties these tables first)',
    });
    const replaced = await store(...copy, '--replace');
    expect(replaced.lines.slice(0, 3)).toEqual([
      `PostgreSQL ${pg.url}: schema ${POSTGRES_SCHEMA_VERSION} (current)`,
      'replaced what it held: sessions 1, audit_events 1',
      `copied from ${join(tmp.dir, 'state', 'doorman.db')}:`,
    ]);
  });

  it('copy refuses a password file others may read, before connecting', async () => {
    const file = config();
    await store('migrate', '--config', file);
    const loose = tmp.write('pw', `${pg.server.password}\n`);
    chmodSync(loose, 0o644);
    const error = await rejection(store('copy', '--to', pg.url, '--password-file', loose, '--config', file));
    expect(error).toMatchObject({
      code: 'UNSAFE_PATH',
      message: expect.stringMatching(
        /^store copy: --password-file: the password file .* can be read or written by others \(mode 644\)/,
      ),
    });
    expect(pg.server.psql(`SELECT to_regclass('doorman_schema') IS NULL`, pg.url.split('/').at(-1))).toBe(
      't\n',
    );
  });
});

describe('doorman store status: lines', () => {
  it('a standby shows its replication lag, or that it has replayed nothing yet', () => {
    const standby = {
      ...unreachable('postgres', 'postgres://doorman@db2/doorman', 1, ''),
      connected: true,
      error: null,
      schemaVersion: 1,
      server: '10.0.0.2:5432',
      role: 'standby' as const,
      replicationLagMs: 120,
    };
    expect(reportLines(standby)).toEqual([
      'engine:           PostgreSQL',
      'where:            postgres://doorman@db2/doorman',
      'connected:        yes',
      'schema:           1 (current)',
      'server:           10.0.0.2:5432',
      'role:             standby',
      'replication lag:  120 ms',
    ]);
    expect(reportLines({ ...standby, replicationLagMs: null })[6]).toBe(
      'replication lag:  unknown (nothing replayed yet)',
    );
    expect(reportLines({ ...standby, schemaVersion: 2 })[3]).toBe(
      "schema:           2, newer than this Doorman's 1: upgrade Doorman",
    );
  });
});
