import Database from 'better-sqlite3';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { StoreBusyError } from '../../../../lib/store/busy.ts';
import { DeviceGroupStore } from '../../../../lib/store/device-group-store.ts';
import { migrations, SCHEMA_VERSION } from '../../../../lib/store/migrations.ts';
import { ManualTimers } from '../../../support/manual-timers.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { rejection } from '../../../support/thrown.ts';

/**
 * What DeviceGroupStore does while another process holds the write lock, and the migration that made its
 * table. What every store does with Device Groups is the contract (contract/device-groups.ts), run on SQLite
 * by sqlite-contract.test.ts beside this file.
 */

const tmp = useTempDb('doorman-device-groups-');
let clock: ManualClock;
beforeEach(() => {
  clock = new ManualClock();
});
const store = () => new DeviceGroupStore(tmp.connect(), { clock });

describe('DeviceGroupStore while another connection holds the write lock', () => {
  it('waits on timers while another connection holds the write lock; gives up after the deadline', async () => {
    const timers = new ManualTimers(clock);
    const web = new DeviceGroupStore(tmp.connect({ busyTimeoutMs: 0 }), { clock, schedule: timers.schedule });
    const holder = tmp.connect();
    holder.exec('BEGIN IMMEDIATE');
    const creating = web.create({ name: 'Lab', cidrs: ['10.0.0.0/8'] });
    await timers.untilWaiting();
    await timers.fireNext();
    holder.exec('ROLLBACK');
    await timers.fireNext();
    expect(await creating).toMatchObject({ name: 'Lab' });
    holder.exec('BEGIN IMMEDIATE');
    const outcome = rejection(web.create({ name: 'Other', cidrs: ['10.0.0.0/8'] }));
    await timers.untilWaiting();
    while (await timers.fireNext());
    expect(await outcome).toBeInstanceOf(StoreBusyError);
    holder.exec('ROLLBACK');
    expect(
      store()
        .list()
        .map((g) => g.name),
    ).toEqual(['Lab']);
  });
});

describe('migration 4', () => {
  it('brings a schema-3 DB up to date: sessions kept, an empty device_groups table with its constraints', () => {
    const old = tmp.track(new Database(tmp.path));
    for (const m of migrations.slice(0, 3)) old.exec(m);
    old.pragma('user_version = 3');
    old
      .prepare(
        "INSERT INTO sessions (key_kind, key, username, source, created_at, last_seen, expires_at, idle_timeout) VALUES ('ip', '10.0.0.7', 'alice', 'portal', 1, 2, 3, 4)",
      )
      .run();
    old.close();
    const db = tmp.connect();
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(SCHEMA_VERSION).toBeGreaterThanOrEqual(4);
    expect(db.prepare('SELECT key, username, source, expires_at, idle_timeout FROM sessions').all()).toEqual([
      { key: '10.0.0.7', username: 'alice', source: 'portal', expires_at: 3, idle_timeout: 4 },
    ]);
    expect(db.prepare('SELECT count(*) FROM device_groups').pluck().get()).toBe(0);
    const insert = db.prepare(
      'INSERT INTO device_groups (name, cidrs, active, created_at, updated_at) VALUES (?, ?, ?, 0, 0)',
    );
    insert.run('Lab', '["10.0.0.0/8"]', 1);
    expect(() => insert.run('LAB', '[]', 1)).toThrow('UNIQUE constraint failed: device_groups.name');
    expect(() => insert.run('x', 'not json', 1)).toThrow(/CHECK constraint failed/);
    expect(() => insert.run('y', '{}', 1)).toThrow(/CHECK constraint failed/);
    expect(() => insert.run('z', '[]', 2)).toThrow(/CHECK constraint failed/);
  });
});
