import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import type { DoormanError } from '../../../../lib/errors.ts';
import { registrationSession } from '../../../../lib/portal/portal-sessions.ts';
import { DEFAULT_PORTAL_SETTINGS, type PortalSettings } from '../../../../lib/portal/settings.ts';
import { StoreBusyError } from '../../../../lib/store/busy.ts';
import type { OpenOptions } from '../../../../lib/store/database.ts';
import { GroupCommit } from '../../../../lib/store/group-commit.ts';
import { SCHEMA_VERSION } from '../../../../lib/store/migrations.ts';
import { SessionStore } from '../../../../lib/store/session-store.ts';
import { openSqliteStore, type SqliteStoreOptions } from '../../../../lib/store/sqlite-store.ts';
import { ManualTimers, settle } from '../../../support/manual-timers.ts';
import { rejection } from '../../../support/thrown.ts';
import { useTempDb } from '../../../support/temp-db.ts';

const tmp = useTempDb('doorman-sqlite-store-');
const NOW = Date.UTC(2026, 5, 1, 9);
const ip = (value: string) => ({ kind: 'ip' as const, value });
const settings = (over: Partial<PortalSettings> = {}): PortalSettings => ({
  ...structuredClone(DEFAULT_PORTAL_SETTINGS),
  ...over,
});

/** The store on a temporary DB file, and a second connection to that file (another process, as it were). */
function open(options: Partial<SqliteStoreOptions> & { db?: OpenOptions } = {}) {
  const clock = new ManualClock(NOW);
  const db = tmp.connect(options.db);
  const store = openSqliteStore(db, { passwordFile: join(tmp.dir, 'pw'), clock, ...options });
  const other = new SessionStore(tmp.connect(), clock);
  return { clock, db, store, other };
}

describe('the SQLite store: sessions', () => {
  it('starts a registration with an address binding for an IPv6 client only, in one commit', async () => {
    const { store, other } = open();
    const s = settings({ registrationClearDate: '2026-09-01', idleTimeoutMinutes: 15 });
    const v4 = await store.sessions.startPortal(registrationSession('02:00:00:00:00:01', 'bob', s, NOW), {
      clientIp: '10.0.0.5',
      settings: s,
    });
    expect(v4.binding).toBeUndefined();
    const before = other.dataVersion();
    const v6 = await store.sessions.startPortal(registrationSession('3c:22:fb:12:34:56', 'alice', s, NOW), {
      clientIp: '2001:db8::5',
      settings: s,
    });
    expect(other.dataVersion()).toBe(before + 1);
    expect(v6.session).toMatchObject({ key: { kind: 'mac', value: '3c:22:fb:12:34:56' }, username: 'alice' });
    // Its end is fixed, one idle timeout from now (before the clear date), and it names the device.
    expect(v6.binding).toMatchObject({
      key: ip('2001:db8::5'),
      username: 'alice',
      source: 'registration',
      mac: '3c:22:fb:12:34:56',
      expiresAt: NOW + 15 * 60_000,
      idleTimeoutMs: 15 * 60_000,
    });
    expect(other.list()).toHaveLength(3);
    // A session on the address itself needs no binding, IPv6 or not.
    const signedIn = await store.sessions.startPortal(
      { key: ip('2001:db8::6'), username: 'carol', source: 'portal' },
      { clientIp: '2001:db8::6', settings: s },
    );
    expect(signedIn.binding).toBeUndefined();
  });

  it('resolves a write once committed, and the writes of one turn share one commit', async () => {
    const { store, other } = open();
    const before = other.dataVersion();
    let resolved = false;
    const started = Promise.all(
      ['alice', 'bob'].map((username, i) =>
        store.sessions.start({ key: ip(`10.0.0.${i + 1}`), username, source: 'api' }),
      ),
    ).finally(() => (resolved = true));
    await Promise.resolve();
    expect(resolved).toBe(false);
    expect(store.sessions.find(ip('10.0.0.1'))).toBeUndefined();
    expect((await started).map((s) => s.username)).toEqual(['alice', 'bob']);
    expect(other.dataVersion()).toBe(before + 1);
    expect(other.find(ip('10.0.0.2'))?.username).toBe('bob');
  });

  it('ends, clears by source, clears, touches and purges through promises', async () => {
    const { clock, store, other } = open();
    const start = (value: string, source: 'api' | 'portal', expiresAt?: number) =>
      store.sessions.start({
        key: ip(value),
        username: value,
        source,
        ...(expiresAt === undefined ? {} : { expiresAt }),
      });
    const a = await start('10.0.0.1', 'api');
    await start('10.0.0.2', 'portal');
    await start('10.0.0.3', 'api', NOW + 1000);
    await store.sessions.touch(new Map([[a.id, NOW + 500]]));
    expect(other.find(ip('10.0.0.1'))?.lastSeen).toBe(NOW + 500);
    expect((await store.sessions.end(ip('10.0.0.1')))?.username).toBe('10.0.0.1');
    expect(await store.sessions.end(ip('10.0.0.1'))).toBeUndefined();
    expect(await store.sessions.endBySource(['portal'])).toBe(1);
    clock.advance(1000);
    expect(await store.sessions.purgeExpired()).toBe(1);
    await start('10.0.0.4', 'api');
    expect(await store.sessions.clear()).toBe(1);
    expect(other.list()).toEqual([]);
  });

  it('moves the change stamp on a write of this connection, which data_version alone would not show', async () => {
    const { store } = open();
    const stamp = store.sessions.changeStamp();
    await store.sessions.start({ key: ip('10.0.0.1'), username: 'alice', source: 'api' });
    expect(store.sessions.changeStamp()).not.toBe(stamp);
  });
});

describe('the SQLite store: Usage Agreement', () => {
  const agreement = { idleTimeoutMinutes: 60, hardTimeoutMinutes: 480 };

  it('starts agreement:<group> on the address of a device in an active group, and nothing outside one', async () => {
    const { store, other } = open();
    await store.deviceGroups.create({ name: 'Off', cidrs: ['10.9.0.0/16'], active: false });
    await store.deviceGroups.create({ name: 'Library PCs', cidrs: ['10.9.0.0/16'] });
    const started = await store.sessions.startAgreement('10.9.0.5', agreement);
    expect(started?.group.name).toBe('Library PCs');
    expect(started?.session).toMatchObject({
      key: ip('10.9.0.5'),
      username: 'agreement:Library PCs',
      source: 'agreement',
      expiresAt: NOW + 480 * 60_000,
      idleTimeoutMs: 60 * 60_000,
    });
    expect(await store.sessions.startAgreement('10.8.0.5', agreement)).toBeUndefined();
    expect(other.list().map((s) => s.key.value)).toEqual(['10.9.0.5']);
  });

  it('decides the group inside the write: a group switched off before the transaction leaves no session', async () => {
    const between: { deactivate?: () => Promise<unknown> } = {};
    const clock = new ManualClock(NOW);
    const db = tmp.connect();
    const real = new GroupCommit(db, { clock });
    const store = openSqliteStore(db, {
      passwordFile: join(tmp.dir, 'pw'),
      clock,
      commits: {
        run: async (write) => {
          await between.deactivate?.();
          return real.run(write);
        },
      },
    });
    const lab = await store.deviceGroups.create({ name: 'Lab', cidrs: ['10.9.0.0/24'] });
    between.deactivate = async () => {
      const changed = await store.deviceGroups.setActive(lab.id, false);
      // The sweep ran and found nothing yet: the agreement was not written.
      expect(changed.endedSessions).toBe(0);
    };
    expect(await store.sessions.startAgreement('10.9.0.5', agreement)).toBeUndefined();
    expect(store.sessions.list()).toEqual([]);
  });
});

describe('the SQLite store: API keys and admins', () => {
  it('creates a key once committed, refuses a taken name, and revokes by name', async () => {
    const { store } = open();
    const { key, info } = await store.apiKeys.create('scripts');
    expect(info).toMatchObject({ name: 'scripts', revokedAt: undefined });
    expect(store.apiKeys.verify(key)).toBe(true);
    const taken = await rejection(store.apiKeys.create('scripts'));
    expect(taken).toMatchObject({ code: 'CONFLICT' });
    const unknown = await rejection(store.apiKeys.revoke('nobody'));
    expect(unknown).toMatchObject({ code: 'NOT_FOUND' });
    expect((await store.apiKeys.revoke('scripts')).revokedAt).toBe(NOW);
    expect(store.apiKeys.verify(key)).toBe(false);
    expect(store.apiKeys.list().map((k) => k.name)).toEqual(['scripts']);
  });

  it('makes, finds and ends admin sign-ins, and removes an admin with theirs', async () => {
    const { store } = open();
    await store.admins.setPassword('root', 'a long enough password');
    await store.admins.setPassword('ops', 'another long password');
    const first = await store.admins.createSession('root');
    const second = await store.admins.createSession('root');
    const ops = await store.admins.createSession('ops');
    expect(store.admins.findSession(first.token)?.userName).toBe('root');
    expect(await store.admins.endSession(first.token)).toBe(true);
    expect(await store.admins.endSession(first.token)).toBe(false);
    expect(store.admins.findSession(first.token)).toBeUndefined();
    expect(await store.admins.endSessionsOf('root')).toBe(1);
    expect(store.admins.findSession(second.token)).toBeUndefined();
    await store.admins.remove('ops');
    expect(store.admins.has('ops')).toBe(false);
    expect(store.admins.findSession(ops.token)).toBeUndefined();
    const missing = await rejection(store.admins.remove('ops'));
    expect(missing).toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('the SQLite store while another connection holds the write lock', () => {
  it('waits on timers, not in SQLite, and writes once the lock is free; gives up with STORE_UNAVAILABLE', async () => {
    const clock = new ManualClock(NOW);
    const timers = new ManualTimers(clock);
    const { store } = open({ clock, schedule: timers.schedule, db: { busyTimeoutMs: 0 } });
    const holder = tmp.connect();
    holder.exec('BEGIN IMMEDIATE');
    let settled = false;
    const created = store.apiKeys.create('scripts').finally(() => (settled = true));
    await timers.untilWaiting();
    expect(settled).toBe(false);
    holder.exec('ROLLBACK');
    await timers.fireNext();
    expect((await created).info.name).toBe('scripts');

    holder.exec('BEGIN IMMEDIATE');
    const given = rejection(store.admins.endSessionsOf('root'));
    await timers.untilWaiting();
    await timers.fireUntil(() => false, NOW + 60_000);
    const error = await given;
    expect(error).toBeInstanceOf(StoreBusyError);
    expect((error as DoormanError).code).toBe('STORE_UNAVAILABLE');
    holder.exec('ROLLBACK');
  });
});

describe('the SQLite store: status and close', () => {
  it('reports the engine, the DB file, its schema version and the connection', async () => {
    const { store } = open();
    expect(await store.status()).toEqual({
      engine: 'sqlite',
      location: tmp.path,
      schemaVersion: SCHEMA_VERSION,
      connected: true,
    });
    expect(store.engine).toBe('sqlite');
    await store.close();
    expect(await store.status()).toMatchObject({ connected: false, schemaVersion: undefined });
  });

  it('writes what was asked for before close, then closes the DB and refuses later writes', async () => {
    const { db, store, other } = open();
    const pending = store.sessions.start({ key: ip('10.0.0.1'), username: 'alice', source: 'api' });
    const closed = store.close();
    const late = await rejection(
      store.sessions.start({ key: ip('10.0.0.2'), username: 'bob', source: 'api' }),
    );
    expect(late).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: `the session DB ${tmp.path} is closed`,
    });
    await closed;
    expect((await pending).username).toBe('alice');
    expect(db.open).toBe(false);
    expect(other.list().map((s) => s.username)).toEqual(['alice']);
    // Twice is harmless.
    await store.close();
    await settle();
  });
});
