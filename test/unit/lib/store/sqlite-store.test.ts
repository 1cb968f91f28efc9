import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import type { DoormanError } from '../../../../lib/errors.ts';
import { registrationSession } from '../../../../lib/portal/portal-sessions.ts';
import { DEFAULT_PORTAL_SETTINGS, type PortalSettings } from '../../../../lib/portal/settings.ts';
import { StoreBusyError } from '../../../../lib/store/busy.ts';
import type { OpenOptions } from '../../../../lib/store/database.ts';
import { SCHEMA_VERSION } from '../../../../lib/store/migrations.ts';
import { SessionStore } from '../../../../lib/store/session-store.ts';
import { openSqliteStore, type SqliteStoreOptions } from '../../../../lib/store/sqlite-store.ts';
import { ManualTimers, settle } from '../../../support/manual-timers.ts';
import { rejection } from '../../../support/thrown.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { ip } from '../../../support/session-keys.ts';

/**
 * What only the SQLite store does: group commit, a write lock held by another process, close. What every store
 * does is the contract (contract/*.ts), run on SQLite by sqlite-contract.test.ts beside this file.
 */

const tmp = useTempDb('doorman-sqlite-store-');
const NOW = Date.UTC(2026, 5, 1, 9);
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
  it('purges ended sessions in commits of 2,000 (a million never hold the event loop in one statement)', async () => {
    const { store, other, clock } = open();
    for (let i = 0; i < 4500; i++)
      other.start({
        key: ip(`10.3.${i >> 8}.${i & 255}`),
        username: 'u',
        source: 'api',
        expiresAt: NOW + 1000,
      });
    other.start({ key: ip('10.4.0.1'), username: 'kept', source: 'api' });
    clock.advance(2000);
    // A statement deletes at most its limit...
    expect(other.purgeEnded(2000, 0)).toHaveLength(2000);
    // ...and the store goes on, a commit a chunk, until the rest is gone.
    expect(await store.sessions.purgeExpired()).toBe(2500);
    expect(store.sessions.list().map((s) => s.username)).toEqual(['kept']);
  });

  it('writes a registration and its address binding in one commit', async () => {
    const { store, other } = open();
    const s = settings({ idleTimeoutMinutes: 15 });
    const before = other.dataVersion();
    const v6 = await store.sessions.startPortal(registrationSession('3c:22:fb:12:34:56', 'alice', s, NOW), {
      clientIp: '2001:db8::5',
      settings: s,
    });
    expect(v6.binding).toBeDefined();
    expect(other.dataVersion()).toBe(before + 1);
    expect(other.list()).toHaveLength(2);
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
});

describe('the SQLite store: Usage Agreement', () => {
  const agreement = { idleTimeoutMinutes: 60, hardTimeoutMinutes: 480 };

  it('decides the group inside the write: a group switched off before the transaction leaves no session', async () => {
    const between: { deactivate?: () => Promise<unknown> } = {};
    const clock = new ManualClock(NOW);
    const db = tmp.connect();
    const store = openSqliteStore(db, {
      passwordFile: join(tmp.dir, 'pw'),
      clock,
      wrapCommits: (real) => ({
        run: async (write) => {
          await between.deactivate?.();
          return real.run(write);
        },
      }),
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
