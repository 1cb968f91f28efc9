import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { AuditStore } from '../../../../lib/store/audit-store.ts';
import { migrate, openDatabase } from '../../../../lib/store/database.ts';
import type { Db } from '../../../../lib/store/database.ts';
import { migrations, SCHEMA_VERSION } from '../../../../lib/store/migrations.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { thrown } from '../../../support/thrown.ts';

const WORKER = join(import.meta.dirname, 'fixtures', 'db-worker.ts');

const tmp = useTempDb('doorman-db-');

/** A plain better-sqlite3 handle, to look at the file without going through the code under test. */
const raw = (file = tmp.path) => tmp.track(new Database(file));
const userVersion = (db: Db) => db.pragma('user_version', { simple: true }) as number;
const schemaObjects = (db: Db) =>
  db
    .prepare("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name")
    .all() as { type: string; name: string }[];

const CURRENT_OBJECTS = [
  { type: 'index', name: 'audit_pages_at' },
  { type: 'index', name: 'sessions_expires_at' },
  { type: 'index', name: 'sign_in_failures_window_start' },
  { type: 'table', name: 'admin_sessions' },
  { type: 'table', name: 'admin_users' },
  { type: 'table', name: 'api_keys' },
  { type: 'table', name: 'audit_pages' },
  { type: 'table', name: 'device_groups' },
  { type: 'table', name: 'ntlm_clients' },
  { type: 'table', name: 'sessions' },
  { type: 'table', name: 'settings' },
  { type: 'table', name: 'sign_in_failures' },
  { type: 'table', name: 'sign_in_known' },
  { type: 'view', name: 'audit_events' },
];

describe('migration', () => {
  it('SCHEMA_VERSION counts the migrations', () => {
    expect(SCHEMA_VERSION).toBe(migrations.length);
  });

  it('brings a schema-1 DB (sessions and API keys only) up to date and keeps its rows', () => {
    const old = raw();
    old.exec(migrations[0] as string);
    old.pragma('user_version = 1');
    old
      .prepare(
        "INSERT INTO sessions (key_kind, key, username, source, created_at, last_seen) VALUES ('ip', '10.0.0.7', 'alice', 'api', 1, 1)",
      )
      .run();
    old.close();
    const db = tmp.connect();
    expect(userVersion(db)).toBe(SCHEMA_VERSION);
    expect(schemaObjects(db)).toEqual(CURRENT_OBJECTS);
    expect(db.prepare('SELECT key, username FROM sessions').all()).toEqual([
      { key: '10.0.0.7', username: 'alice' },
    ]);
  });

  it("brings a schema-8 DB's audit trail into pages: the same events, in the same order, readable as before", () => {
    const old = raw();
    for (const migration of migrations.slice(0, 8)) old.exec(migration);
    old.pragma('user_version = 8');
    const insert = old.prepare(
      'INSERT INTO audit_events (at, box, kind, actor, username, address, detail) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    insert.run(1000, 'proxy1', 'api.login', 'api-key:wifi', 'alice', '10.0.0.7', '{}');
    insert.run(1000, 'proxy2', 'settings.saved', 'admin:root', null, null, '{"changed":["portal.mode"]}');
    insert.run(900, 'proxy1', 'session.expired', 'system', 'bob', '10.0.0.8', '{"reason":"idle"}');
    // Doorman never wrote these (JSON.stringify of an object), but a hand-edited row must not stop the upgrade.
    insert.run(800, 'proxy1', 'admin.sign-in', 'admin:root', null, null, '{"cut":');
    insert.run(700, 'proxy1', 'admin.sign-in', 'admin:root', null, null, '[1]');
    old.close();

    const db = tmp.connect();
    expect(userVersion(db)).toBe(SCHEMA_VERSION);
    expect(schemaObjects(db)).toEqual(CURRENT_OBJECTS);
    const all = new AuditStore(db).list({ limit: 10 }).events;
    expect(all.slice(3).map((e) => e.detail)).toEqual([{ unreadable: '{"cut":' }, { unreadable: '[1]' }]);
    const events = all.slice(0, 3);
    expect(
      events.map(({ id, at, box, kind, user, detail }) => ({ id, at, box, kind, user, detail })),
    ).toEqual([
      {
        id: 2 * 1024,
        at: 1000,
        box: 'proxy2',
        kind: 'settings.saved',
        user: undefined,
        detail: { changed: ['portal.mode'] },
      },
      { id: 1 * 1024, at: 1000, box: 'proxy1', kind: 'api.login', user: 'alice', detail: {} },
      {
        id: 3 * 1024,
        at: 900,
        box: 'proxy1',
        kind: 'session.expired',
        user: 'bob',
        detail: { reason: 'idle' },
      },
    ]);
    // The view answers an ad hoc query as the table did.
    expect(
      db
        .prepare('SELECT id, at, actor, address, detail FROM audit_events WHERE at >= 900 ORDER BY at, id')
        .all(),
    ).toEqual([
      { id: 3 * 1024, at: 900, actor: 'system', address: '10.0.0.8', detail: '{"reason":"idle"}' },
      { id: 1 * 1024, at: 1000, actor: 'api-key:wifi', address: '10.0.0.7', detail: '{}' },
      { id: 2 * 1024, at: 1000, actor: 'admin:root', address: null, detail: '{"changed":["portal.mode"]}' },
    ]);
  });

  it('brings a schema-2 DB up to date: sessions keep their rows and hard expiry, with no idle limit', () => {
    const old = raw();
    old.exec(migrations[0] as string);
    old.exec(migrations[1] as string);
    old.pragma('user_version = 2');
    const insert = old.prepare(
      'INSERT INTO sessions (key_kind, key, username, source, created_at, last_seen, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    insert.run('ip', '10.0.0.7', 'alice', 'api', 1, 2, null);
    insert.run('mac', 'aa:bb:cc:dd:ee:ff', 'bob', 'portal', 3, 4, 5000);
    old.close();

    const db = tmp.connect();
    expect(userVersion(db)).toBe(SCHEMA_VERSION);
    expect(schemaObjects(db)).toEqual(CURRENT_OBJECTS);
    expect(db.prepare('SELECT * FROM sessions ORDER BY id').all()).toEqual([
      {
        id: 1,
        key_kind: 'ip',
        key: '10.0.0.7',
        username: 'alice',
        source: 'api',
        created_at: 1,
        last_seen: 2,
        expires_at: null,
        idle_timeout: null,
        mac: null,
      },
      {
        id: 2,
        key_kind: 'mac',
        key: 'aa:bb:cc:dd:ee:ff',
        username: 'bob',
        source: 'portal',
        created_at: 3,
        last_seen: 4,
        expires_at: 5000,
        idle_timeout: null,
        mac: null,
      },
    ]);
    // The new column is STRICT and checked like the others.
    expect(() => db.prepare("UPDATE sessions SET idle_timeout = 'soon' WHERE id = 1").run()).toThrow(
      'cannot store TEXT value in INTEGER column sessions.idle_timeout',
    );
    expect(() => db.prepare('UPDATE sessions SET idle_timeout = 0 WHERE id = 1').run()).toThrow(
      /CHECK constraint failed/,
    );
  });

  it('brings a schema-5 DB up to date: address bindings end one idle timeout after their last traffic', () => {
    const old = raw();
    for (const migration of migrations.slice(0, 5)) old.exec(migration);
    old.pragma('user_version = 5');
    const insert = old.prepare(
      'INSERT INTO sessions (key_kind, key, username, source, created_at, last_seen, expires_at, idle_timeout) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    insert.run('ip', 'fd00::5', 'carol', 'registration', 1000, 5000, 9_000_000, 60_000);
    insert.run('ip', 'fd00::6', 'dave', 'registration', 1000, 7000, null, 60_000);
    insert.run('ip', 'fd00::7', 'erin', 'registration', 1000, 7000, 30_000, 60_000);
    insert.run('ip', '10.0.0.7', 'alice', 'portal', 1000, 5000, 9_000_000, 60_000);
    insert.run('mac', 'aa:bb:cc:dd:ee:ff', 'carol', 'registration', 1000, 1000, 9_000_000, null);
    old.close();

    const db = tmp.connect();
    expect(userVersion(db)).toBe(SCHEMA_VERSION);
    expect(db.prepare('SELECT key, expires_at, idle_timeout, mac FROM sessions ORDER BY id').all()).toEqual([
      { key: 'fd00::5', expires_at: 65_000, idle_timeout: 60_000, mac: null },
      { key: 'fd00::6', expires_at: 67_000, idle_timeout: 60_000, mac: null },
      { key: 'fd00::7', expires_at: 30_000, idle_timeout: 60_000, mac: null },
      { key: '10.0.0.7', expires_at: 9_000_000, idle_timeout: 60_000, mac: null },
      { key: 'aa:bb:cc:dd:ee:ff', expires_at: 9_000_000, idle_timeout: null, mac: null },
    ]);
    expect(() => db.prepare("UPDATE sessions SET mac = 'aa:bb' WHERE id = 1").run()).toThrow(
      /CHECK constraint failed/,
    );
  });

  it('brings an empty file from user_version 0 to SCHEMA_VERSION with every table', () => {
    writeFileSync(tmp.path, '');
    const before = raw();
    expect(userVersion(before)).toBe(0);
    expect(schemaObjects(before)).toEqual([]);
    before.close();

    const db = tmp.connect();
    expect(userVersion(db)).toBe(SCHEMA_VERSION);
    expect(schemaObjects(db)).toEqual(CURRENT_OBJECTS);
    expect(schemaObjects(raw())).toEqual(CURRENT_OBJECTS);
  });

  it('creates the file when it does not exist', () => {
    expect(existsSync(tmp.path)).toBe(false);
    const db = tmp.connect();
    expect(existsSync(tmp.path)).toBe(true);
    expect(userVersion(db)).toBe(SCHEMA_VERSION);
  });

  it('the tables are STRICT and enforce their CHECK constraints', () => {
    const db = tmp.connect();
    const insert = db.prepare(
      'INSERT INTO sessions (key_kind, key, username, source, created_at, last_seen) VALUES (?, ?, ?, ?, ?, ?)',
    );
    expect(() => insert.run('ip', '10.0.0.1', 'alice', 'api', 'yesterday', 0)).toThrow(
      'cannot store TEXT value in INTEGER column sessions.created_at',
    );
    expect(() => insert.run('host', '10.0.0.1', 'alice', 'api', 0, 0)).toThrow(/CHECK constraint failed/);
    expect(() => insert.run('ip', '10.0.0.1', 'alice', 'ldap', 0, 0)).toThrow(/CHECK constraint failed/);
    insert.run('ip', '10.0.0.1', 'alice', 'api', 0, 0);
    expect(() => insert.run('ip', '10.0.0.1', 'bob', 'api', 0, 0)).toThrow(
      'UNIQUE constraint failed: sessions.key_kind, sessions.key',
    );
  });

  it('reopening an up-to-date DB is a no-op: data kept, no write lock needed', () => {
    const first = tmp.connect();
    first
      .prepare("INSERT INTO api_keys (name, key_id, secret_hash, created_at) VALUES ('n', 'k', x'00', 1)")
      .run();
    first.close();

    // Another handle holds the write lock: a migration (BEGIN IMMEDIATE) could not start without waiting.
    const holder = raw();
    holder.exec('BEGIN IMMEDIATE');
    const again = tmp.connect({ busyTimeoutMs: 0 });
    expect(userVersion(again)).toBe(SCHEMA_VERSION);
    expect(again.prepare('SELECT name, key_id FROM api_keys').all()).toEqual([{ name: 'n', key_id: 'k' }]);
    migrate(again);
    holder.exec('ROLLBACK');
    expect(schemaObjects(again)).toEqual(CURRENT_OBJECTS);
  });

  it('a DB from a newer Doorman is SCHEMA_TOO_NEW and is left untouched', () => {
    const newer = raw();
    newer.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    newer.close();

    expect(thrown(() => openDatabase(tmp.path))).toMatchObject({
      code: 'SCHEMA_TOO_NEW',
      message: `session DB schema ${SCHEMA_VERSION + 1} is newer than this Doorman (${SCHEMA_VERSION}): upgrade Doorman`,
    });
    const after = raw();
    expect(userVersion(after)).toBe(SCHEMA_VERSION + 1);
    expect(schemaObjects(after)).toEqual([]);
  });

  it('a read-only open of a DB from a newer Doorman is SCHEMA_TOO_NEW too', () => {
    const newer = raw();
    newer.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    newer.close();

    expect(thrown(() => openDatabase(tmp.path, { readonly: true }))).toMatchObject({
      code: 'SCHEMA_TOO_NEW',
      message: `session DB schema ${SCHEMA_VERSION + 1} is newer than this Doorman (${SCHEMA_VERSION}): upgrade Doorman`,
    });
  });

  it('a read-only open does not migrate an old DB: STORE_UNAVAILABLE', () => {
    writeFileSync(tmp.path, '');
    expect(thrown(() => openDatabase(tmp.path, { readonly: true }))).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: `session DB is at schema 0, needs ${SCHEMA_VERSION}`,
    });
    expect(userVersion(raw())).toBe(0);
  });

  it('two processes opening a fresh file at once migrate it once, without errors', async () => {
    const results = await Promise.all(
      [1, 2, 3, 4].map(
        (n) =>
          new Promise<{ status: number | null; stderr: string }>((resolve, reject) => {
            const child = spawn(process.execPath, [WORKER, 'open', tmp.path, String(n)], {
              stdio: ['ignore', 'ignore', 'pipe'],
            });
            let stderr = '';
            child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
            child.on('error', reject);
            child.on('close', (status) => resolve({ status, stderr }));
          }),
      ),
    );
    expect(results).toEqual(Array.from({ length: 4 }, () => ({ status: 0, stderr: '' })));
    const db = raw();
    expect(userVersion(db)).toBe(SCHEMA_VERSION);
    expect(schemaObjects(db)).toEqual(CURRENT_OBJECTS);
  });
});

describe('opening', () => {
  it('turns on WAL, synchronous=NORMAL, foreign keys and a 5 s busy timeout', () => {
    const db = tmp.connect();
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('synchronous', { simple: true })).toBe(1);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
    // WAL is a property of the file: a plain handle sees it too.
    expect(raw().pragma('journal_mode', { simple: true })).toBe('wal');
  });

  it('takes the busy timeout from the options', () => {
    expect(tmp.connect({ busyTimeoutMs: 250 }).pragma('busy_timeout', { simple: true })).toBe(250);
  });

  it('waits openBusyTimeoutMs while opening, then busyTimeoutMs (the web app: 0, it never blocks)', () => {
    // A new file must be migrated, which needs the write lock: an open that may not wait fails at once.
    writeFileSync(tmp.path, '');
    const holder = raw();
    holder.exec('BEGIN IMMEDIATE');
    expect(thrown(() => openDatabase(tmp.path, { busyTimeoutMs: 0 }))).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      cause: expect.objectContaining({ code: 'SQLITE_BUSY' }),
    });
    holder.exec('ROLLBACK');
    const db = tmp.connect({ busyTimeoutMs: 0, openBusyTimeoutMs: 5000 });
    expect(db.pragma('busy_timeout', { simple: true })).toBe(0);
  });

  it('a read-only handle reads but cannot write', () => {
    tmp.connect().close();
    const db = tmp.connect({ readonly: true });
    expect(db.readonly).toBe(true);
    expect(db.prepare('SELECT count(*) AS n FROM sessions').get()).toEqual({ n: 0 });
    expect(() => db.prepare('DELETE FROM sessions').run()).toThrow('attempt to write a readonly database');
  });

  it('read-only: a missing file is STORE_UNAVAILABLE, and is not created', () => {
    expect(thrown(() => openDatabase(tmp.path, { readonly: true }))).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: `cannot open session DB ${tmp.path}: unable to open database file`,
    });
    expect(existsSync(tmp.path)).toBe(false);
  });

  it('mustExist: a missing file is STORE_UNAVAILABLE, and is not created', () => {
    expect(thrown(() => openDatabase(tmp.path, { mustExist: true }))).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: `cannot open session DB ${tmp.path}: unable to open database file`,
    });
    expect(existsSync(tmp.path)).toBe(false);
    tmp.connect().close();
    expect(userVersion(tmp.connect({ mustExist: true }))).toBe(SCHEMA_VERSION);
  });

  it('a directory that does not exist is STORE_UNAVAILABLE', () => {
    const missing = join(tmp.dir, 'no-such-dir', 'doorman.db');
    expect(thrown(() => openDatabase(missing))).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: `cannot open session DB ${missing}: Cannot open database because the directory does not exist`,
    });
  });

  it('a file that is not a SQLite database is STORE_UNAVAILABLE', () => {
    writeFileSync(
      tmp.path,
      'this is not a database, just some text that is long enough to fill a header. '.repeat(8),
    );
    expect(thrown(() => openDatabase(tmp.path))).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: `cannot open session DB ${tmp.path}: file is not a database`,
    });
  });
});

describe('two handles on one file', () => {
  const insertKey = (db: Db, name: string) =>
    db
      .prepare("INSERT INTO api_keys (name, key_id, secret_hash, created_at) VALUES (?, ?, x'00', 1)")
      .run(name, `id-${name}`);
  const names = (db: Db) => db.prepare('SELECT name FROM api_keys ORDER BY name').pluck().all() as string[];

  it("each sees the other's committed writes", () => {
    const a = tmp.connect();
    const b = tmp.connect();
    insertKey(a, 'from-a');
    expect(names(b)).toEqual(['from-a']);
    insertKey(b, 'from-b');
    expect(names(a)).toEqual(['from-a', 'from-b']);
  });

  it('an open read transaction does not block the writer, and keeps its snapshot', () => {
    const reader = tmp.connect();
    const writer = tmp.connect({ busyTimeoutMs: 0 });
    insertKey(writer, 'before');
    reader.exec('BEGIN');
    expect(names(reader)).toEqual(['before']);
    insertKey(writer, 'during');
    expect(names(reader)).toEqual(['before']);
    reader.exec('COMMIT');
    expect(names(reader)).toEqual(['before', 'during']);
  });

  it('uncommitted writes are not seen by the other handle', () => {
    const a = tmp.connect();
    const b = tmp.connect();
    a.exec('BEGIN IMMEDIATE');
    insertKey(a, 'pending');
    expect(names(b)).toEqual([]);
    a.exec('ROLLBACK');
    expect(names(b)).toEqual([]);
    expect(names(a)).toEqual([]);
  });
});
