import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { auditRecords, type AuditEvent } from '../../../../../lib/audit/event.ts';
import type { AuditPage, AuditQuery } from '../../../../../lib/audit/query.ts';
import { ManualClock } from '../../../../../lib/clock.ts';
import { DEFAULT_SESSION_TTL_MS } from '../../../../../lib/store/admin-rules.ts';
import { AuditStore } from '../../../../../lib/store/audit-store.ts';
import { openDatabase, type Db } from '../../../../../lib/store/database.ts';
import { connectPostgres, type Sql } from '../../../../../lib/store/postgres/connect.ts';
import {
  planCopy,
  settingsAfterReplace,
  toPgAudit,
  type SqliteAuditRow,
  type SqliteRows,
} from '../../../../../lib/store/postgres/copy.ts';
import {
  copyIntoPostgres,
  inSqliteSnapshot,
  readSqliteAudit,
  readSqliteRows,
} from '../../../../../lib/store/postgres/copy-from-sqlite.ts';
import { pgAudit } from '../../../../../lib/store/postgres/audit.ts';
import { PgAdmins } from '../../../../../lib/store/postgres/admins.ts';
import { PgApiKeys } from '../../../../../lib/store/postgres/api-keys.ts';
import { PgDeviceGroups } from '../../../../../lib/store/postgres/device-groups.ts';
import { migratePostgres } from '../../../../../lib/store/postgres/migrate.ts';
import { Replica } from '../../../../../lib/store/postgres/replica.ts';
import { PgSessions } from '../../../../../lib/store/postgres/sessions.ts';
import { SettingsRow } from '../../../../../lib/store/settings-row.ts';
import { openSqliteStore } from '../../../../../lib/store/sqlite-store.ts';
import type { Store } from '../../../../../lib/store/store.ts';
import { usePostgres } from '../../../../harness/postgres.ts';
import { useTempDb } from '../../../../support/temp-db.ts';
import { rejection } from '../../../../support/thrown.ts';

const T0 = Date.UTC(2026, 2, 1, 9);
const HOUR = 3_600_000;

/** An event of the SQLite site's trail recorded by another box (one that ran before it, since renamed). */
const OTHER_BOX_EVENT = {
  at: T0 - 2 * HOUR,
  box: 'proxy0',
  kind: 'admin.sign-in-failed' as const,
  actor: 'admin:root',
  user: undefined,
  address: '192.0.2.7',
  detail: {},
};

describe('planCopy: SQLite rows to PostgreSQL rows', () => {
  const rows = (over: Partial<SqliteRows> = {}): SqliteRows => ({
    sessions: [],
    apiKeys: [],
    adminUsers: [],
    adminSessions: [],
    deviceGroups: [],
    settings: [],
    ...over,
  });
  const session = (id: number, expires_at: number | null) => ({
    id,
    key_kind: 'ip' as const,
    key: `10.0.0.${id}`,
    username: `user${id}`,
    source: 'api' as const,
    created_at: T0 - HOUR,
    last_seen: T0 - 60_000,
    expires_at,
    idle_timeout: 1_800_000,
    mac: null,
  });

  it('keeps the sessions and sign-ins before their hard expiry, without the session ids', () => {
    const plan = planCopy(
      rows({
        sessions: [session(1, null), session(2, T0), session(3, T0 + 1)],
        adminSessions: [
          {
            token_hash: Buffer.alloc(32, 1),
            user_name: 'root',
            csrf_token: 'c1',
            created_at: 0,
            expires_at: T0,
          },
          {
            token_hash: Buffer.alloc(32, 2),
            user_name: 'root',
            csrf_token: 'c2',
            created_at: 0,
            expires_at: T0 + 1,
          },
        ],
      }),
      T0,
    );
    expect(plan.sessions).toEqual([session(1, null), session(3, T0 + 1)].map(({ id: _id, ...row }) => row));
    expect(plan.adminSessions.map((s) => s.csrf_token)).toEqual(['c2']);
    expect(plan.left).toEqual({ expiredSessions: 1, expiredAdminSessions: 1, settings: [] });
  });

  it('parses JSON text, makes 0/1 booleans, and takes only the directory and portal settings', () => {
    const plan = planCopy(
      rows({
        deviceGroups: [
          { id: 7, name: 'Lab', cidrs: '["10.9.0.0/24"]', active: 1, created_at: 1, updated_at: 2 },
          { id: 9, name: 'Off', cidrs: '[]', active: 0, created_at: 3, updated_at: 4 },
        ],
        settings: [
          { name: 'directory', value: '{"kind":"active-directory"}', updated_at: 5 },
          { name: 'portal', value: '{"mode":"agreement"}', updated_at: 6 },
          { name: 'seamless', value: '{"enabled":true}', updated_at: 7 },
        ],
      }),
      T0,
    );
    expect(plan.deviceGroups).toEqual([
      { name: 'Lab', cidrs: ['10.9.0.0/24'], active: true, created_at: 1, updated_at: 2 },
      { name: 'Off', cidrs: [], active: false, created_at: 3, updated_at: 4 },
    ]);
    expect(plan.settings).toEqual([
      { name: 'directory', value: { kind: 'active-directory' }, updated_at: 5 },
      { name: 'portal', value: { mode: 'agreement' }, updated_at: 6 },
    ]);
    expect(plan.left.settings).toEqual(['seamless']);
  });

  it('refuses a row SQLite should never have held, naming it', () => {
    const group = { id: 1, name: 'Lab', cidrs: '{"not":"a list"}', active: 1, created_at: 1, updated_at: 1 };
    expect(() => planCopy(rows({ deviceGroups: [group] }), T0)).toThrow(
      'Device Group "Lab": cidrs is not a list of networks',
    );
    expect(() => planCopy(rows({ deviceGroups: [{ ...group, cidrs: '[]', active: 2 }] }), T0)).toThrow(
      'Device Group "Lab": active is 2, not 0 or 1',
    );
    expect(() => planCopy(rows({ settings: [{ name: 'portal', value: '{', updated_at: 1 }] }), T0)).toThrow(
      'settings row portal: not valid JSON',
    );
  });

  it('an audit event keeps its time, box and fields; nulls become absent; the detail is parsed', () => {
    const row = {
      id: 9,
      at: T0,
      box: 'proxy1',
      kind: 'settings.saved',
      actor: 'cli:ops',
      username: null,
      address: null,
      detail: '{"changes":{"mode":{"from":"off","to":"agreement"}}}',
    };
    expect(toPgAudit(row)).toEqual({
      at: T0,
      box: 'proxy1',
      kind: 'settings.saved',
      actor: 'cli:ops',
      user: undefined,
      address: undefined,
      detail: { changes: { mode: { from: 'off', to: 'agreement' } } },
    });
    expect(toPgAudit({ ...row, username: 'alice', address: '10.0.0.5', detail: '{}' })).toMatchObject({
      user: 'alice',
      address: '10.0.0.5',
      detail: {},
    });
    expect(() => toPgAudit({ ...row, detail: '[1]' })).toThrow('audit event 9: detail is not a JSON object');
    expect(() => toPgAudit({ ...row, detail: '{' })).toThrow('audit event 9: not valid JSON');
    expect(() => toPgAudit({ ...row, kind: 'store.copied' })).toThrow(
      'audit event 9: kind "store.copied" is unknown to this Doorman',
    );
  });

  it('a replaced settings row’s version never goes back', () => {
    const settings = [
      { name: 'portal', value: {}, updated_at: 100 },
      { name: 'directory', value: {}, updated_at: 100 },
    ];
    expect(
      settingsAfterReplace(
        settings,
        new Map([
          ['portal', 500],
          ['directory', 50],
        ]),
      ),
    ).toEqual([
      { name: 'portal', value: {}, updated_at: 501 },
      { name: 'directory', value: {}, updated_at: 100 },
    ]);
  });
});

describe('copying a SQLite DB into PostgreSQL (a real PostgreSQL 15)', { timeout: 60_000 }, () => {
  const pg = usePostgres();
  const tmp = useTempDb('doorman-copy-');
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  const connect = async (): Promise<Sql> => {
    const sql = connectPostgres(
      { url: pg.url, passwordFile: pg.passwordFile },
      { applicationName: 'test', connectTimeoutSeconds: 2 },
    );
    cleanups.push(() => sql.end({ timeout: 1 }));
    await migratePostgres(sql);
    return sql;
  };

  /** A running box on the target: its replica and repositories, as a Doorman on PostgreSQL has them. */
  const box = async (clock: ManualClock) => {
    const sql = await connect();
    const replica = new Replica(sql, { log: () => {}, clock, pollMs: 60_000 });
    cleanups.push(() => replica.close());
    const repositories = {
      sessions: new PgSessions(sql, replica, { clock }),
      apiKeys: new PgApiKeys(sql, replica, clock),
      admins: new PgAdmins(sql, replica, clock),
      deviceGroups: new PgDeviceGroups(sql, replica, { clock }),
    };
    await replica.start();
    return { sql, replica, ...repositories };
  };

  /** A one-box site's SQLite DB, made through its own stores: a bit of everything, some of it run out. */
  const sqliteSite = async (clock: ManualClock) => {
    const db = tmp.connect();
    const store: Store = openSqliteStore(db, {
      passwordFile: join(tmp.dir, 'bind-password'),
      clock,
      directoryApplied: () => true,
      audit: { box: 'proxy1' },
    });
    await store.admins.setPassword('root', 'a long enough password');
    await store.admins.setPassword('ops', 'another long password');
    const oldSignIn = await store.admins.createSession('ops');
    clock.advance(DEFAULT_SESSION_TTL_MS);
    const signIn = await store.admins.createSession('root');
    const kept = await store.apiKeys.create('logon script');
    await store.apiKeys.create('old script');
    await store.apiKeys.revoke('old script');
    expect(store.apiKeys.verify(kept.key)).toBe(true);
    const lab = await store.deviceGroups.create({ name: 'Lab', cidrs: ['10.9.0.0/24', '2001:db8::/64'] });
    await store.deviceGroups.create({ name: 'Guests', cidrs: ['10.8.0.0/16'], active: false });
    const portal = await store.portal.update({
      mode: 'agreement',
      policyText: 'Be nice.',
      idleTimeoutMinutes: 30,
    });
    expect(portal.ok).toBe(true);
    await store.directory.apply(
      {
        kind: 'open-directory',
        host: 'ldap.example.test',
        baseDn: 'dc=example,dc=test',
        bindDn: 'cn=squid,dc=example,dc=test',
        transport: 'starttls',
      },
      'bind secret',
      { test: async () => ({ ok: true, groupCount: 3 }) },
    );
    new SettingsRow(db, 'seamless').write('{"per":"box"}', clock.now());
    await store.sessions.start({
      key: { kind: 'ip', value: '10.0.0.5' },
      username: 'alice',
      source: 'api',
      idleTimeoutMs: 900_000,
    });
    await store.sessions.start({
      key: { kind: 'ip', value: '10.0.0.6' },
      username: 'bob',
      source: 'api',
      expiresAt: clock.now() + 1000,
    });
    await store.sessions.startAgreement('10.9.0.20', { idleTimeoutMinutes: 30, hardTimeoutMinutes: 480 });
    await store.sessions.start({
      key: { kind: 'mac', value: '52:54:00:aa:bb:cc' },
      username: 'carol',
      source: 'registration',
      expiresAt: clock.now() + 30 * 86_400_000,
    });
    await store.sessions.start({
      key: { kind: 'ip', value: '2001:db8::7' },
      username: 'carol',
      source: 'registration',
      mac: '52:54:00:aa:bb:cc',
      lifetimeMs: HOUR,
    });
    await store.sessions.touch(new Map([[1, clock.now() + 5]]));
    // The audit trail: an admin's action with a detail and no user or address, two logins in one
    // millisecond, an expiry recorded after them but at the earlier moment it happened, and an event of
    // another box.
    await store.audit.record([
      {
        kind: 'settings.saved',
        actor: 'admin:root',
        detail: { changes: { mode: { from: 'off', to: 'agreement' } } },
      },
      { kind: 'api.login', actor: 'api-key:logon script', user: 'alice', address: '10.0.0.5' },
      { kind: 'api.login', actor: 'api-key:logon script', user: 'bob', address: '10.0.0.6' },
    ]);
    await store.audit.record({
      kind: 'session.expired',
      actor: 'system',
      user: 'dave',
      address: '10.0.0.9',
      detail: { reason: 'idle' },
      at: clock.now() - HOUR,
    });
    new AuditStore(db).insert([OTHER_BOX_EVENT]);
    clock.advance(2000); // bob's session is past its hard expiry now
    await store.close();
    return { path: tmp.path, kept, signIn, oldSignIn, lab };
  };

  const readOnly = (path: string): Db => tmp.track(openDatabase(path, { readonly: true }));
  /** What `doorman store copy` does between its reading and its printing. */
  const copyFile = (sql: Sql, path: string, clock: ManualClock, replace = false) => {
    const db = readOnly(path);
    return inSqliteSnapshot(db, () =>
      copyIntoPostgres(sql, planCopy(readSqliteRows(db), clock.now()), {
        replace,
        now: clock.now(),
        audit: readSqliteAudit(db),
      }),
    );
  };

  /** Every event of a trail, newest first, page by page as the Audit screen reads it, without the ids. */
  const trail = async (list: (query: AuditQuery) => Promise<AuditPage> | AuditPage) => {
    const events: Omit<AuditEvent, 'id'>[] = [];
    let before: AuditQuery['before'];
    do {
      const page = await list({ limit: 200, ...(before === undefined ? {} : { before }) });
      events.push(...page.events.map(({ id: _id, ...event }) => event));
      before = page.next;
    } while (before !== undefined);
    return events;
  };
  const sqliteTrail = (path: string) => {
    const audit = new AuditStore(readOnly(path));
    return trail((query) => audit.list(query));
  };
  const pgTrail = (sql: Sql) => {
    const audit = pgAudit(
      sql,
      () => [],
      () => {},
    );
    return trail((query) => audit.list(query));
  };

  const counters = async (sql: Sql) =>
    Object.fromEntries(
      (await sql<{ tab: string; last: number }[]>`SELECT tab, last FROM changes`).map((c) => [c.tab, c.last]),
    );

  const shared = async (sql: Sql) => ({
    sessions:
      await sql`SELECT key_kind, key, username, source, created_at, last_seen, expires_at, idle_timeout, mac, change
      FROM sessions ORDER BY key_kind, key`,
    apiKeys:
      await sql`SELECT name, key_id, secret_hash, created_at, last_used_at, revoked_at, change FROM api_keys ORDER BY name`,
    adminUsers:
      await sql`SELECT name, password_hash, created_at, updated_at, change FROM admin_users ORDER BY name`,
    adminSessions:
      await sql`SELECT token_hash, user_name, csrf_token, created_at, expires_at, change FROM admin_sessions ORDER BY created_at`,
    deviceGroups:
      await sql`SELECT name, cidrs, active, created_at, updated_at, change FROM device_groups ORDER BY name`,
    settings: await sql`SELECT name, value, updated_at, change FROM settings ORDER BY name`,
    auditEvents: await sql`SELECT * FROM audit_events ORDER BY id`,
  });

  /** A copy refused for what the target holds (`held`, as the message lists it), the target as it was. */
  const expectRefused = async (sql: Sql, path: string, clock: ManualClock, held: string) => {
    const before = { rows: await shared(sql), counters: await counters(sql) };
    expect(await rejection(copyFile(sql, path, clock))).toMatchObject({
      code: 'CONFLICT',
      message: `the PostgreSQL store already holds ${held}: nothing copied (--replace empties these tables first)`,
    });
    expect({ rows: await shared(sql), counters: await counters(sql) }).toEqual(before);
  };

  it('copies every shared row field by field, stamped with one new change number per table', async () => {
    const clock = new ManualClock(T0);
    const site = await sqliteSite(clock);
    const source = readSqliteRows(readOnly(site.path));
    const sql = await connect();
    const before = await counters(sql);

    const result = await copyIntoPostgres(sql, planCopy(source, clock.now()), {
      replace: false,
      now: clock.now(),
      audit: readSqliteAudit(readOnly(site.path)),
    });

    expect(result.copied).toEqual({
      sessions: 4,
      api_keys: 2,
      admin_users: 2,
      admin_sessions: 1,
      device_groups: 2,
      settings: 2,
      audit_events: 5,
    });
    expect(Object.values(result.replaced).every((n) => n === 0)).toBe(true);
    const after = await counters(sql);
    for (const tab of ['sessions', 'api_keys', 'admins', 'device_groups', 'settings'])
      expect(after[tab], tab).toBe((before[tab] ?? 0) + 1);
    const stamp = (tab: string) => ({ change: after[tab] });
    const target = await shared(sql);
    const live = source.sessions.filter((s) => s.key !== '10.0.0.6');
    expect(target.sessions).toEqual(
      live
        .map(({ id: _id, ...row }) => ({ ...row, ...stamp('sessions') }))
        .sort((a, b) => (a.key_kind + a.key < b.key_kind + b.key ? -1 : 1)),
    );
    expect(target.apiKeys).toEqual(source.apiKeys.map((k) => ({ ...k, ...stamp('api_keys') })));
    expect(target.adminUsers).toEqual(source.adminUsers.map((u) => ({ ...u, ...stamp('admins') })));
    expect(target.adminSessions).toEqual(
      source.adminSessions
        .filter((s) => s.expires_at > clock.now())
        .map((s) => ({ ...s, ...stamp('admins') })),
    );
    expect(target.deviceGroups).toEqual([
      {
        name: 'Guests',
        cidrs: ['10.8.0.0/16'],
        active: false,
        ...pick(source.deviceGroups[1]),
        ...stamp('device_groups'),
      },
      {
        name: 'Lab',
        cidrs: ['10.9.0.0/24', '2001:db8::/64'],
        active: true,
        ...pick(source.deviceGroups[0]),
        ...stamp('device_groups'),
      },
    ]);
    expect(target.settings).toEqual(
      source.settings
        .filter((s) => s.name !== 'seamless')
        .map((s) => ({
          name: s.name,
          value: JSON.parse(s.value),
          updated_at: s.updated_at,
          ...stamp('settings'),
        })),
    );
    // The audit trail, as the Audit screen pages it on either engine: every field, events of one
    // millisecond in the order they were recorded, nulls kept, the detail as jsonb.
    const events = await pgTrail(sql);
    expect(events).toEqual(await sqliteTrail(site.path));
    const signedInAt = T0 + DEFAULT_SESSION_TTL_MS;
    expect(events).toEqual([
      login('bob', '10.0.0.6', signedInAt),
      login('alice', '10.0.0.5', signedInAt),
      {
        at: signedInAt,
        box: 'proxy1',
        kind: 'settings.saved',
        actor: 'admin:root',
        user: undefined,
        address: undefined,
        detail: { changes: { mode: { from: 'off', to: 'agreement' } } },
      },
      {
        at: signedInAt - HOUR,
        box: 'proxy1',
        kind: 'session.expired',
        actor: 'system',
        user: 'dave',
        address: '10.0.0.9',
        detail: { reason: 'idle' },
      },
      OTHER_BOX_EVENT,
    ]);
    expect(
      await sql`SELECT kind, username, address, jsonb_typeof(detail) AS detail FROM audit_events
        WHERE kind IN ('settings.saved', 'admin.sign-in-failed') ORDER BY kind`,
    ).toEqual([
      { kind: 'admin.sign-in-failed', username: null, address: '192.0.2.7', detail: 'object' },
      { kind: 'settings.saved', username: null, address: null, detail: 'object' },
    ]);
  });

  it('a box already running on the target has the copy at once: sessions, keys, sign-ins, groups', async () => {
    const clock = new ManualClock(T0);
    const site = await sqliteSite(clock);
    const running = await box(clock);
    const sql = await connect();
    await copyFile(sql, site.path, clock);
    await vi.waitFor(() => expect(running.sessions.list()).toHaveLength(4), { timeout: 2000, interval: 5 });
    expect(running.sessions.find({ kind: 'ip', value: '10.0.0.5' })).toMatchObject({
      username: 'alice',
      source: 'api',
      idleTimeoutMs: 900_000,
    });
    expect(running.sessions.find({ kind: 'ip', value: '10.9.0.20' })).toMatchObject({
      username: 'agreement:Lab',
    });
    expect(running.sessions.find({ kind: 'ip', value: '2001:db8::7' })).toMatchObject({
      mac: '52:54:00:aa:bb:cc',
    });
    expect(running.sessions.find({ kind: 'ip', value: '10.0.0.6' })).toBeUndefined();
    await vi.waitFor(() => expect(running.apiKeys.verify(site.kept.key)).toBe(true), {
      timeout: 2000,
      interval: 5,
    });
    expect(running.apiKeys.list().map((k) => [k.name, k.revokedAt !== undefined])).toEqual([
      ['logon script', false],
      ['old script', true],
    ]);
    await vi.waitFor(() => expect(running.admins.findSession(site.signIn.token)?.userName).toBe('root'), {
      timeout: 2000,
      interval: 5,
    });
    expect(running.admins.findSession(site.oldSignIn.token)).toBeUndefined();
    expect(await running.admins.verify('ops', 'another long password')).toBe(true);
    await vi.waitFor(() => expect(running.deviceGroups.activeGroupFor('10.9.0.1')?.name).toBe('Lab'), {
      timeout: 2000,
      interval: 5,
    });
    expect(running.deviceGroups.findByName('Guests')?.active).toBe(false);
  });

  it("a box's login goes through while the audit trail is copied; the shared rows after it are counted again", async () => {
    const clock = new ManualClock(T0);
    const site = await sqliteSite(clock);
    const running = await box(clock);
    const sql = await connect();
    const db = readOnly(site.path);
    const events = [...readSqliteAudit(db)].flat();
    let login: Promise<unknown> | undefined;
    let loggedIn = false;
    let batchesAfterLogin = 0;
    let batches = 0;
    /**
     * The trail, a few events a batch, a box's login asked for after the first: it must not wait for the copy.
     * Batches go on until three have been copied after the login committed (or 2,000: then it waited).
     */
    function* trailWithLogin(): Generator<SqliteAuditRow[]> {
      for (let i = 0; i < 2000 && batchesAfterLogin < 3; i++) {
        batches += 1;
        if (loggedIn) batchesAfterLogin += 1;
        yield events.map((e) => ({ ...e, id: e.id + i * 1000 }));
        login ??= running.sessions
          .start({ key: { kind: 'ip', value: '10.7.0.1' }, username: 'erin', source: 'api' })
          .then(() => (loggedIn = true));
      }
    }
    const copied = inSqliteSnapshot(db, () =>
      copyIntoPostgres(sql, planCopy(readSqliteRows(db), clock.now()), {
        replace: true,
        now: clock.now(),
        audit: trailWithLogin(),
      }),
    );
    const result = await copied;
    await login;
    // Erin's login committed while the audit events were still being inserted, not after the copy.
    expect(batchesAfterLogin).toBe(3);
    // Then counted under the change numbers: --replace ended her session with the rest the target held.
    expect(result.replaced.sessions).toBe(1);
    expect(result.copied.audit_events).toBe(batches * events.length);
    expect(await sql`SELECT 1 FROM sessions WHERE key = '10.7.0.1'`).toHaveLength(0);
  });

  it('refuses a target that holds any shared row, and writes nothing', async () => {
    const clock = new ManualClock(T0);
    const site = await sqliteSite(clock);
    const running = await box(clock);
    await running.apiKeys.create('already here');
    await expectRefused(await connect(), site.path, clock, 'api_keys (1)');
  });

  it('a target holding audit events is refused as for the shared tables; --replace deletes them first', async () => {
    const clock = new ManualClock(T0);
    const site = await sqliteSite(clock);
    const sql = await connect();
    const audit = pgAudit(
      sql,
      (events) => auditRecords(events, clock.now(), 'pg1'),
      () => {},
    );
    await audit.record({ kind: 'admin.sign-in', actor: 'admin:root', address: '192.0.2.1' });
    await expectRefused(sql, site.path, clock, 'audit_events (1)');

    const result = await copyFile(sql, site.path, clock, true);
    expect(result.replaced).toEqual({
      sessions: 0,
      api_keys: 0,
      admin_users: 0,
      admin_sessions: 0,
      device_groups: 0,
      settings: 0,
      audit_events: 1,
    });
    expect(result.copied.audit_events).toBe(5);
    const events = await pgTrail(sql);
    expect(events).toEqual(await sqliteTrail(site.path));
    expect(events.map((e) => e.box)).not.toContain('pg1');
  });

  it('--replace empties the shared tables first: every box drops the replaced sessions, versions go on', async () => {
    const clock = new ManualClock(T0);
    const site = await sqliteSite(clock);
    const running = await box(clock);
    await running.apiKeys.create('already here');
    await running.admins.setPassword('someone', 'a long enough password');
    await running.deviceGroups.create({ name: 'Old', cidrs: ['192.0.2.0/24'] });
    const old = await running.sessions.start({
      key: { kind: 'ip', value: '10.0.0.5' },
      username: 'mallory',
      source: 'api',
    });
    await running.sessions.start({
      key: { kind: 'ip', value: '192.0.2.1' },
      username: 'dave',
      source: 'api',
    });
    const sql = await connect();
    const future = clock.now() + 86_400_000;
    await sql`INSERT INTO settings (name, value, updated_at, change) VALUES ('portal', '{"mode":"off"}', ${future}, 0),
      ('other', '{"kept":true}', 1, 0)`;

    const result = await copyFile(sql, site.path, clock, true);

    expect(result.replaced).toEqual({
      sessions: 2,
      api_keys: 1,
      admin_users: 1,
      admin_sessions: 0,
      device_groups: 1,
      settings: 1,
      audit_events: 0,
    });
    const target = await shared(sql);
    expect(target.apiKeys.map((k) => k.name)).toEqual(['logon script', 'old script']);
    expect(target.adminUsers.map((u) => u.name)).toEqual(['ops', 'root']);
    expect(target.deviceGroups.map((g) => g.name)).toEqual(['Guests', 'Lab']);
    expect(target.sessions.map((s) => s.key)).toEqual([
      '10.0.0.5',
      '10.9.0.20',
      '2001:db8::7',
      '52:54:00:aa:bb:cc',
    ]);
    expect(target.settings.map((s) => [s.name, s.updated_at > future || s.name !== 'portal'])).toEqual([
      ['directory', true],
      ['other', true],
      ['portal', true],
    ]);
    const [sessionsChange] = await sql<{ last: number }[]>`SELECT last FROM changes WHERE tab = 'sessions'`;
    expect(await sql`SELECT id, change FROM session_deletions ORDER BY id`).toEqual([
      { id: old.id, change: sessionsChange?.last },
      { id: old.id + 1, change: sessionsChange?.last },
    ]);
    await vi.waitFor(
      () => expect(running.sessions.find({ kind: 'ip', value: '10.0.0.5' })?.username).toBe('alice'),
      {
        timeout: 2000,
        interval: 5,
      },
    );
    expect(running.sessions.find({ kind: 'ip', value: '192.0.2.1' })).toBeUndefined();
    expect(running.admins.has('someone')).toBe(false);
  });

  it('a row PostgreSQL refuses midway leaves the target as it was', async () => {
    const clock = new ManualClock(T0);
    const site = await sqliteSite(clock);
    // SQLite has no length limit on a user name; PostgreSQL's table allows 1024 characters. Sessions are
    // written last, so everything else is in by then.
    const db = tmp.track(openDatabase(site.path));
    db.prepare(
      `INSERT INTO sessions (key_kind, key, username, source, created_at, last_seen) VALUES ('ip', '10.0.0.99', ?, 'api', ?, ?)`,
    ).run('x'.repeat(1025), clock.now(), clock.now());
    db.close();
    const sql = await connect();
    const before = { rows: await shared(sql), counters: await counters(sql) };
    const failed = await rejection(copyFile(sql, site.path, clock));
    expect(failed).toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringMatching(
        /^PostgreSQL refused the copy, nothing was copied: .*"sessions_username_check"/,
      ),
    });
    expect((failed as Error).message).not.toContain('xxxx');
    expect({ rows: await shared(sql), counters: await counters(sql) }).toEqual(before);
  });

  it('an audit event PostgreSQL refuses, or a page that is not JSON, leaves the target as it was', async () => {
    const clock = new ManualClock(T0);
    const site = await sqliteSite(clock);
    const db = tmp.track(openDatabase(site.path));
    const page = db.prepare(
      `INSERT INTO audit_pages (at_first, at_last, box, events) VALUES (${T0}, ${T0}, 'proxy1', ?)`,
    );
    const signIn = (actor: string) =>
      JSON.stringify([
        ['admin.sign-in', actor],
        [0, 0, 1, null, null],
      ]);
    const bad = page.run(signIn('admin:root').replace('null]]', '{"cut":')).lastInsertRowid;
    const sql = await connect();
    const before = { rows: await shared(sql), counters: await counters(sql) };
    expect(await rejection(copyFile(sql, site.path, clock))).toMatchObject({
      code: 'INVALID_INPUT',
      message: `audit page ${bad}: not valid JSON`,
    });
    expect({ rows: await shared(sql), counters: await counters(sql) }).toEqual(before);
    // SQLite has no length limit on the actor; PostgreSQL's table allows 256 characters.
    db.prepare('DELETE FROM audit_pages WHERE id = ?').run(bad);
    page.run(signIn(`admin:${'y'.repeat(300)}`));
    db.close();
    const failed = await rejection(copyFile(sql, site.path, clock));
    expect(failed).toMatchObject({
      code: 'INVALID_INPUT',
      message: expect.stringMatching(
        /^PostgreSQL refused the copy, nothing was copied: .*"audit_events_actor_check"/,
      ),
    });
    expect({ rows: await shared(sql), counters: await counters(sql) }).toEqual(before);
  });

  it('copies more rows than one statement takes, and more audit events than one batch, in their order', async () => {
    const clock = new ManualClock(T0);
    const db = tmp.connect();
    const insert = db.prepare(
      `INSERT INTO sessions (key_kind, key, username, source, created_at, last_seen) VALUES ('ip', ?, ?, 'api', ?, ?)`,
    );
    db.transaction(() => {
      for (let i = 0; i < 4500; i++) insert.run(`10.1.${i >> 8}.${i & 255}`, `user${i}`, T0, T0);
    })();
    // 4500 events over 13 milliseconds, recorded out of time order: about 350 a millisecond, whose order
    // is their ids', each millisecond's events spread over the batches of 2000.
    new AuditStore(db).insert(
      Array.from({ length: 4500 }, (_, i) => ({
        at: T0 + ((i * 7) % 13),
        box: `proxy${i % 3}`,
        kind: 'api.login' as const,
        actor: 'api-key:wifi',
        user: i % 5 === 0 ? undefined : `user${i}`,
        address: `10.1.${i >> 8}.${i & 255}`,
        detail: i % 2 === 0 ? {} : { n: i },
      })),
    );
    db.close();
    const sql = await connect();
    const result = await copyFile(sql, tmp.path, clock);
    expect(result.copied.sessions).toBe(4500);
    expect(result.copied.audit_events).toBe(4500);
    expect(await sql`SELECT count(*) AS n, count(DISTINCT change) AS changes FROM sessions`).toEqual([
      { n: 4500, changes: 1 },
    ]);
    const events = await pgTrail(sql);
    expect(events).toHaveLength(4500);
    expect(events).toEqual(await sqliteTrail(tmp.path));
  });
});

/** The times of a SQLite device_groups row. */
const pick = (row: { created_at: number; updated_at: number } | undefined) => ({
  created_at: row?.created_at,
  updated_at: row?.updated_at,
});

/** An api.login event of the SQLite site's key. */
const login = (user: string, address: string, at: number) => ({
  at,
  box: 'proxy1',
  kind: 'api.login',
  actor: 'api-key:logon script',
  user,
  address,
  detail: {},
});
