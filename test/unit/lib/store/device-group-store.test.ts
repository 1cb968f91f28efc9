import Database from 'better-sqlite3';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { StoreBusyError } from '../../../../lib/store/busy.ts';
import { DeviceGroupInputError, DeviceGroupStore } from '../../../../lib/store/device-group-store.ts';
import { migrations, SCHEMA_VERSION } from '../../../../lib/store/migrations.ts';
import { SessionStore, type SessionKey } from '../../../../lib/store/session-store.ts';
import { ManualTimers } from '../../../support/manual-timers.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { rejection } from '../../../support/thrown.ts';

const tmp = useTempDb('doorman-device-groups-');
let clock: ManualClock;
beforeEach(() => {
  clock = new ManualClock();
});
const store = () => new DeviceGroupStore(tmp.connect(), { clock });

describe('DeviceGroupStore', () => {
  it('creates, lists in creation order, updates, deactivates and removes', async () => {
    const s = store();
    const lab = await s.create({ name: 'Lab', cidrs: ['10.1.2.3/16'] });
    expect(lab).toEqual({ id: expect.any(Number), name: 'Lab', cidrs: ['10.1.0.0/16'], active: true });
    const guests = await s.create({ name: 'Guests', cidrs: ['2001:db8::/48'], active: false });
    expect(s.list().map((g) => g.name)).toEqual(['Lab', 'Guests']);
    expect(await s.update(lab.id, { cidrs: ['10.2.0.0/16'] })).toEqual({
      ...lab,
      cidrs: ['10.2.0.0/16'],
      endedSessions: 0,
    });
    expect(await s.setActive(guests.id, true)).toMatchObject({ name: 'Guests', active: true });
    expect(s.findByName('LAB')?.id).toBe(lab.id);
    expect(await s.remove(lab.id)).toMatchObject({ name: 'Lab' });
    expect(s.list().map((g) => g.name)).toEqual(['Guests']);
    await expect(s.remove(lab.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(s.update(lab.id, { active: false })).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('lists every bad field at once, and a name taken in another case is one of them', async () => {
    const s = store();
    await s.create({ name: 'Straße Lab', cidrs: ['10.0.0.0/8'] });
    const error = await rejection(s.create({ name: 'STRASSE LAB', cidrs: ['10.0.0.0/8'] }));
    expect(error).toBeUndefined(); // ß upper-cases to SS: a different name
    const taken = await rejection(s.create({ name: 'straße lab', cidrs: ['x'], active: 'yes' }));
    expect(taken).toBeInstanceOf(DeviceGroupInputError);
    expect((taken as DeviceGroupInputError).problems).toEqual([
      { field: 'cidrs.0', message: expect.stringContaining('"x" is not an IPv4 or IPv6 address') },
      { field: 'active', message: 'must be true or false (given: "yes")' },
      { field: 'name', message: '"straße lab" is taken by the group "Straße Lab"' },
    ]);
    // Beyond ASCII, which SQLite's NOCASE does not fold.
    await s.create({ name: 'Été', cidrs: ['10.0.0.0/8'] });
    await expect(s.create({ name: 'ÉTÉ', cidrs: ['10.0.0.0/8'] })).rejects.toBeInstanceOf(
      DeviceGroupInputError,
    );
    // Renaming a group to its own name in another case is fine.
    const ete = s.findByName('été');
    expect(await s.update(ete?.id ?? 0, { name: 'ÉTÉ' })).toMatchObject({ name: 'ÉTÉ' });
    expect(s.list()).toHaveLength(3);
  });

  it('activeGroupFor: the first active group holding the address, IPv6 and mapped IPv4 included', async () => {
    const s = store();
    const a = await s.create({ name: 'A', cidrs: ['10.0.0.0/8'], active: false });
    await s.create({ name: 'B', cidrs: ['10.1.0.0/16', '2001:db8::/32'] });
    await s.create({ name: 'C', cidrs: ['10.1.2.0/24', '192.168.0.7'] });
    expect(s.activeGroupFor('10.1.2.3')?.name).toBe('B');
    expect(s.activeGroupFor('::ffff:10.1.2.3')?.name).toBe('B');
    expect(s.activeGroupFor('2001:db8:1::5')?.name).toBe('B');
    expect(s.activeGroupFor('192.168.0.7')?.name).toBe('C');
    expect(s.activeGroupFor('10.9.9.9')).toBeUndefined();
    expect(s.activeGroupFor('not an ip')).toBeUndefined();
    await s.setActive(a.id, true);
    expect(s.activeGroupFor('10.1.2.3')?.name).toBe('A');
    expect(s.activeGroupFor('10.9.9.9')?.name).toBe('A');
  });

  it("activeGroupFor sees another process's change (PRAGMA data_version)", async () => {
    const reader = store();
    expect(reader.activeGroupFor('10.0.0.1')).toBeUndefined();
    const writer = store();
    const g = await writer.create({ name: 'Lab', cidrs: ['10.0.0.0/24'] });
    expect(reader.activeGroupFor('10.0.0.1')?.name).toBe('Lab');
    await writer.setActive(g.id, false);
    expect(reader.activeGroupFor('10.0.0.1')).toBeUndefined();
  });

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

describe('Usage Agreement sessions follow the active groups', () => {
  const ip = (value: string): SessionKey => ({ kind: 'ip', value });
  /** Groups and, on another handle (the web app), the sessions the splash page started. */
  function setup() {
    return { groups: store(), sessions: new SessionStore(tmp.connect(), clock) };
  }
  const agree = (sessions: SessionStore, address: string, group: string) =>
    sessions.start({ key: ip(address), username: `agreement:${group}`, source: 'agreement' });
  const users = (sessions: SessionStore) =>
    Object.fromEntries(sessions.list().map((x) => [x.key.value, x.username]));

  it('deactivating a group ends the agreements of its addresses, and only those; the count is returned', async () => {
    const { groups, sessions } = setup();
    const lab = await groups.create({ name: 'Lab', cidrs: ['10.1.0.0/16'] });
    await groups.create({ name: 'Library', cidrs: ['10.2.0.0/16', '2001:db8::/32'] });
    agree(sessions, '10.1.0.5', 'Lab');
    agree(sessions, '10.1.0.6', 'Lab');
    agree(sessions, '10.2.0.5', 'Library');
    agree(sessions, '2001:db8::5', 'Library');
    // Other ways in on addresses of the group are not agreements: they stay.
    sessions.start({ key: ip('10.1.0.7'), username: 'alice', source: 'portal' });
    sessions.start({ key: ip('10.1.0.8'), username: 'bob', source: 'api' });
    sessions.start({ key: ip('10.1.0.9'), username: 'carol', source: 'registration' });
    sessions.start({
      key: { kind: 'mac', value: '52:54:00:12:34:56' },
      username: 'dave',
      source: 'registration',
    });

    expect(await groups.setActive(lab.id, false)).toMatchObject({
      name: 'Lab',
      active: false,
      endedSessions: 2,
    });
    expect(users(sessions)).toEqual({
      '10.1.0.7': 'alice',
      '10.1.0.8': 'bob',
      '10.1.0.9': 'carol',
      '10.2.0.5': 'agreement:Library',
      '2001:db8::5': 'agreement:Library',
      '52:54:00:12:34:56': 'dave',
    });
    // Turning it on again starts nothing: the devices accept the policy again.
    expect(await groups.setActive(lab.id, true)).toMatchObject({ endedSessions: 0 });
    expect(sessions.find(ip('10.1.0.5'))).toBeUndefined();
  });

  it('new networks end the agreements of addresses left out; removing a group ends the rest', async () => {
    const { groups, sessions } = setup();
    const lab = await groups.create({ name: 'Lab', cidrs: ['10.1.0.0/16'] });
    agree(sessions, '10.1.1.5', 'Lab');
    agree(sessions, '10.1.2.5', 'Lab');
    expect(await groups.update(lab.id, { cidrs: ['10.1.1.0/24'] })).toMatchObject({ endedSessions: 1 });
    expect(users(sessions)).toEqual({ '10.1.1.5': 'agreement:Lab' });
    expect(await groups.remove(lab.id)).toMatchObject({ name: 'Lab', endedSessions: 1 });
    expect(users(sessions)).toEqual({});
  });

  it('an address still in another active group keeps its session, under that group name; a renamed group renames its sessions', async () => {
    const { groups, sessions } = setup();
    const lab = await groups.create({ name: 'Lab', cidrs: ['10.1.0.0/16'] });
    const campus = await groups.create({ name: 'Campus', cidrs: ['10.0.0.0/8'] });
    agree(sessions, '10.1.0.5', 'Lab');
    agree(sessions, '10.3.0.5', 'Campus');
    expect(await groups.remove(lab.id)).toMatchObject({ endedSessions: 0 });
    expect(users(sessions)).toEqual({ '10.1.0.5': 'agreement:Campus', '10.3.0.5': 'agreement:Campus' });
    expect(await groups.update(campus.id, { name: 'Whole campus' })).toMatchObject({ endedSessions: 0 });
    expect(users(sessions)).toEqual({
      '10.1.0.5': 'agreement:Whole campus',
      '10.3.0.5': 'agreement:Whole campus',
    });
  });

  it('counts only live sessions; a change that fails validation ends nothing', async () => {
    const { groups, sessions } = setup();
    const lab = await groups.create({ name: 'Lab', cidrs: ['10.1.0.0/16'] });
    sessions.start({
      key: ip('10.1.0.5'),
      username: 'agreement:Lab',
      source: 'agreement',
      expiresAt: clock.now() + 1000,
    });
    agree(sessions, '10.1.0.6', 'Lab');
    await expect(groups.update(lab.id, { cidrs: ['bogus'], active: false })).rejects.toBeInstanceOf(
      DeviceGroupInputError,
    );
    expect(Object.keys(users(sessions))).toEqual(['10.1.0.5', '10.1.0.6']);
    clock.advance(1000);
    expect(await groups.setActive(lab.id, false)).toMatchObject({ endedSessions: 1 });
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
