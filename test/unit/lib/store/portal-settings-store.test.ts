import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { DEFAULT_PORTAL_SETTINGS } from '../../../../lib/portal/settings.ts';
import { StoreBusyError } from '../../../../lib/store/busy.ts';
import { PortalSettingsStore } from '../../../../lib/store/portal-settings-store.ts';
import { ManualTimers } from '../../../support/manual-timers.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { rejection, thrown } from '../../../support/thrown.ts';

const tmp = useTempDb('doorman-portal-settings-');
let clock: ManualClock;
beforeEach(() => {
  // Midday, so the server-local date is 2026-03-10 in any time zone within ±12 h.
  clock = new ManualClock(Date.UTC(2026, 2, 10, 12));
});
const store = () => new PortalSettingsStore(tmp.connect(), { clock });

describe('PortalSettingsStore', () => {
  it('load() gives the defaults (mode off) and version 0 until something is saved', () => {
    const s = store();
    expect(s.load()).toEqual(DEFAULT_PORTAL_SETTINGS);
    expect(s.version()).toBe(0);
  });

  it('save() stores valid settings; every save raises the version, even with the clock standing still', async () => {
    const s = store();
    const first = await s.save({ ...DEFAULT_PORTAL_SETTINGS, mode: 'authentication' });
    expect(first).toMatchObject({ ok: true, changed: ['mode'], previous: DEFAULT_PORTAL_SETTINGS });
    const v1 = s.version();
    expect(v1).toBeGreaterThan(0);
    expect(first.ok && first.version).toBe(v1);
    const again = await s.save({ ...DEFAULT_PORTAL_SETTINGS, mode: 'authentication' });
    expect(again).toMatchObject({ ok: true, changed: [] });
    expect(s.version()).toBeGreaterThan(v1);
    clock.advance(-60_000);
    const v2 = s.version();
    await s.save(DEFAULT_PORTAL_SETTINGS);
    expect(s.version()).toBeGreaterThan(v2);
    // Another handle on the same file sees the settings and the version.
    expect(store().load()).toEqual(DEFAULT_PORTAL_SETTINGS);
    expect(store().version()).toBe(s.version());
  });

  it('a save with problems writes nothing and lists every problem', async () => {
    const s = store();
    const result = await s.save({ ...DEFAULT_PORTAL_SETTINGS, mode: 'agreement', idleTimeoutMinutes: 0 });
    expect(result.ok).toBe(false);
    expect(!result.ok && result.problems.map((p) => p.field)).toEqual(['idleTimeoutMinutes', 'policyText']);
    expect(s.version()).toBe(0);
    expect(s.load()).toEqual(DEFAULT_PORTAL_SETTINGS);
  });

  it('update() changes only the fields given (walled-garden lists one by one), keeping the rest', async () => {
    const s = store();
    await s.update({ mode: 'registration', walledGarden: { hosts: ['Example.com'] } });
    const result = await s.update({ walledGarden: { cidrs: ['10.0.0.1/8'] }, hardTimeoutMinutes: undefined });
    expect(result).toMatchObject({ ok: true, changed: ['walledGarden'] });
    expect(s.load()).toEqual({
      ...DEFAULT_PORTAL_SETTINGS,
      mode: 'registration',
      walledGarden: { hosts: ['example.com'], cidrs: ['10.0.0.0/8'] },
    });
  });

  it('a clear date set or changed must lie after today (local); a passed one already stored is kept', async () => {
    const s = store();
    const today = await s.update({ registrationClearDate: '2026-03-10', idleTimeoutMinutes: 0 });
    expect(!today.ok && today.problems.map((p) => p.field)).toEqual([
      'idleTimeoutMinutes',
      'registrationClearDate',
    ]);
    expect(await s.update({ registrationClearDate: '2026-03-11' })).toMatchObject({ ok: true });
    clock.advance(30 * 86_400_000);
    // The date has passed: other fields can still be saved...
    expect(await s.update({ mode: 'registration' })).toMatchObject({ ok: true });
    // ...but it cannot be moved to another past day.
    const moved = await s.update({ registrationClearDate: '2026-03-12' });
    expect(!moved.ok && moved.problems[0]?.message).toMatch(/is not in the future/);
    expect(await s.update({ registrationClearDate: null })).toMatchObject({ ok: true });
  });

  it('stored settings that are no longer valid are CONFIG_INVALID on load, not the defaults', () => {
    const db = tmp.connect();
    db.prepare(
      'INSERT INTO settings (name, value, updated_at) VALUES (\'portal\', \'{"mode":"bogus"}\', 1)',
    ).run();
    const error = thrown(() => new PortalSettingsStore(db, { clock }).load());
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('mode: must be one of');
  });

  it('waits on timers while another connection holds the write lock, then saves; gives up after the deadline', async () => {
    const timers = new ManualTimers(clock);
    const web = new PortalSettingsStore(tmp.connect({ busyTimeoutMs: 0 }), {
      clock,
      schedule: timers.schedule,
    });
    const holder = tmp.connect();
    holder.exec('BEGIN IMMEDIATE');
    const saving = web.update({ mode: 'authentication' });
    await timers.untilWaiting();
    await timers.fireNext();
    expect(store().version()).toBe(0);
    holder.exec('ROLLBACK');
    await timers.fireNext();
    expect(await saving).toMatchObject({ ok: true });

    holder.exec('BEGIN IMMEDIATE');
    const outcome = rejection(web.update({ mode: 'off' }));
    await timers.untilWaiting();
    while (await timers.fireNext());
    expect(await outcome).toBeInstanceOf(StoreBusyError);
    holder.exec('ROLLBACK');
    expect(store().load().mode).toBe('authentication');
  });
});
