import { beforeEach, describe, expect, it } from 'vitest';
import { SessionLookup } from '../../../../helpers/session-lookup.ts';
import { ManualClock } from '../../../../lib/clock.ts';
import { DEFAULT_PORTAL_SETTINGS, type PortalSettings } from '../../../../lib/portal/settings.ts';
import { StoreBusyError } from '../../../../lib/store/busy.ts';
import { DIRECTORY_ROW } from '../../../../lib/store/directory-settings-store.ts';
import { PortalSettingsStore } from '../../../../lib/store/portal-settings-store.ts';
import { SettingsRow } from '../../../../lib/store/settings-row.ts';
import { SessionStore, type Session, type SessionKey } from '../../../../lib/store/session-store.ts';
import { ManualTimers } from '../../../support/manual-timers.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { rejection, thrown } from '../../../support/thrown.ts';

const tmp = useTempDb('doorman-portal-settings-');
let clock: ManualClock;
beforeEach(() => {
  // Midday, so the server-local date is 2026-03-10 in any time zone within ±12 h.
  clock = new ManualClock(Date.UTC(2026, 2, 10, 12));
});
/** The sign-in modes need an applied directory: these tests say one is (the last one checks the default). */
const directoryApplied = () => true;
const store = () => new PortalSettingsStore(tmp.connect(), { clock, directoryApplied });

describe('PortalSettingsStore', () => {
  it('load() gives the defaults (mode off) and version 0 until something is saved', () => {
    const s = store();
    expect(s.load()).toEqual(DEFAULT_PORTAL_SETTINGS);
    expect(s.version()).toBe(0);
  });

  it('refuses an idle timeout shorter than the configuration lets helpers measure, and writes nothing', async () => {
    // 2 × lastSeenFlushSeconds (30) + squid.ttl (5): 65 s, so 2 minutes is the least.
    const s = new PortalSettingsStore(tmp.connect(), { clock, leastIdleSeconds: 65, directoryApplied });
    const short = await s.update({ mode: 'authentication', idleTimeoutMinutes: 1 });
    expect(short.ok).toBe(false);
    expect(!short.ok && short.problems).toEqual([
      { field: 'idleTimeoutMinutes', message: expect.stringMatching(/^1 is shorter .* at least 2 minutes/) },
    ]);
    expect(s.version()).toBe(0);
    expect(await s.update({ mode: 'authentication', idleTimeoutMinutes: 2 })).toMatchObject({ ok: true });
    expect(await s.update({ idleTimeoutMinutes: null })).toMatchObject({ ok: true });
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

  it('stored settings that are no longer valid are CONFIG_INVALID on load, not the defaults; a save mends them', async () => {
    const db = tmp.connect();
    db.prepare(
      'INSERT INTO settings (name, value, updated_at) VALUES (\'portal\', \'{"mode":"bogus"}\', 1)',
    ).run();
    const error = thrown(() => new PortalSettingsStore(db, { clock }).load());
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain('mode: must be one of');
    // A save mends them: it starts from the defaults instead of failing on what cannot be read.
    const mended = await new PortalSettingsStore(db, { clock, directoryApplied }).save({
      ...DEFAULT_PORTAL_SETTINGS,
      mode: 'authentication',
    });
    expect(mended).toMatchObject({ ok: true, previous: DEFAULT_PORTAL_SETTINGS, changed: ['mode'] });
    expect(new PortalSettingsStore(db, { clock }).load().mode).toBe('authentication');
  });

  it('waits on timers while another connection holds the write lock, then saves; gives up after the deadline', async () => {
    const timers = new ManualTimers(clock);
    const web = new PortalSettingsStore(tmp.connect({ busyTimeoutMs: 0 }), {
      clock,
      schedule: timers.schedule,
      directoryApplied,
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

  it('refuses the sign-in modes while this DB holds no applied directory, and saves them once it does', async () => {
    const db = tmp.connect();
    const s = new PortalSettingsStore(db, { clock });
    for (const mode of ['authentication', 'registration']) {
      const refused = await s.update({ mode });
      expect(!refused.ok && refused.problems).toEqual([
        {
          field: 'mode',
          message:
            `"${mode}" signs users in with a directory account, and no directory is applied: ` +
            'apply one first (the Directory screen, or doorman directory set)',
        },
      ]);
    }
    expect(s.version()).toBe(0);
    expect(await s.update({ mode: 'agreement', policyText: 'Be kind.' })).toMatchObject({ ok: true });
    // Save & apply writes the directory's row (DirectorySettingsStore): from then on the modes are taken.
    new SettingsRow(db, DIRECTORY_ROW).write('{}', clock.now());
    expect(await s.update({ mode: 'registration' })).toMatchObject({ ok: true });
    expect(s.load().mode).toBe('registration');
  });
});

describe('a save applies the new limits to the portal sessions already open', () => {
  const MINUTE = 60_000;
  const T0 = Date.UTC(2026, 2, 10, 12);
  /** Server local midnight, whatever TZ the tests run in. */
  const midnight = (y: number, m: number, d: number) => new Date(y, m - 1, d).getTime();
  const ip = (value: string): SessionKey => ({ kind: 'ip', value });
  const mac = (value: string): SessionKey => ({ kind: 'mac', value });
  const limits = (sessions: SessionStore, key: SessionKey) => {
    const found = sessions.list().find((x) => x.key.kind === key.kind && x.key.value === key.value);
    return found && { expiresAt: found.expiresAt, idleTimeoutMs: found.idleTimeoutMs };
  };
  const base = (fields: Partial<PortalSettings>): PortalSettings => ({
    ...DEFAULT_PORTAL_SETTINGS,
    mode: 'authentication',
    ...fields,
  });

  /** The settings store and, on another handle (the web app), the sessions the splash page started. */
  function setup() {
    const settings = store();
    const sessions = new SessionStore(tmp.connect(), clock);
    return { settings, sessions };
  }

  it('portal and agreement: the new idle limit, and created_at + the new hard limit; API sessions keep theirs', async () => {
    const { settings, sessions } = setup();
    sessions.start({
      key: ip('10.0.0.1'),
      username: 'alice',
      source: 'portal',
      expiresAt: T0 + 480 * MINUTE,
      idleTimeoutMs: 60 * MINUTE,
    });
    clock.advance(10 * MINUTE);
    sessions.start({
      key: ip('10.0.0.2'),
      username: 'agreement:Lab',
      source: 'agreement',
      expiresAt: T0 + 490 * MINUTE,
      idleTimeoutMs: 60 * MINUTE,
    });
    sessions.start({
      key: ip('10.0.0.3'),
      username: 'bob',
      source: 'api',
      expiresAt: T0 + 999 * MINUTE,
      idleTimeoutMs: 5 * MINUTE,
    });

    const saved = await settings.save(base({ idleTimeoutMinutes: 15, hardTimeoutMinutes: 120 }));
    expect(saved).toMatchObject({ ok: true, sessionsUpdated: 2 });
    expect(limits(sessions, ip('10.0.0.1'))).toEqual({
      expiresAt: T0 + 120 * MINUTE,
      idleTimeoutMs: 15 * MINUTE,
    });
    expect(limits(sessions, ip('10.0.0.2'))).toEqual({
      expiresAt: T0 + 130 * MINUTE,
      idleTimeoutMs: 15 * MINUTE,
    });
    expect(limits(sessions, ip('10.0.0.3'))).toEqual({
      expiresAt: T0 + 999 * MINUTE,
      idleTimeoutMs: 5 * MINUTE,
    });

    await settings.update({ idleTimeoutMinutes: null, hardTimeoutMinutes: null });
    expect(limits(sessions, ip('10.0.0.1'))).toEqual({ expiresAt: undefined, idleTimeoutMs: undefined });
    expect(limits(sessions, ip('10.0.0.2'))).toEqual({ expiresAt: undefined, idleTimeoutMs: undefined });
    expect(limits(sessions, ip('10.0.0.3'))).toEqual({
      expiresAt: T0 + 999 * MINUTE,
      idleTimeoutMs: 5 * MINUTE,
    });
  });

  it('registrations: the start of the new clear date; their address bindings that date and the idle limit (60 min if none)', async () => {
    const { settings, sessions } = setup();
    sessions.start({
      key: mac('52:54:00:12:34:56'),
      username: 'carol',
      source: 'registration',
      expiresAt: midnight(2026, 5, 1),
    });
    sessions.start({
      key: ip('fd00::5'),
      username: 'carol',
      source: 'registration',
      expiresAt: midnight(2026, 5, 1),
      idleTimeoutMs: 30 * MINUTE,
    });

    await settings.save(
      base({ mode: 'registration', idleTimeoutMinutes: 10, registrationClearDate: '2026-04-01' }),
    );
    expect(limits(sessions, mac('52:54:00:12:34:56'))).toEqual({
      expiresAt: midnight(2026, 4, 1),
      idleTimeoutMs: undefined,
    });
    expect(limits(sessions, ip('fd00::5'))).toEqual({
      expiresAt: midnight(2026, 4, 1),
      idleTimeoutMs: 10 * MINUTE,
    });

    await settings.update({ idleTimeoutMinutes: null, registrationClearDate: null });
    expect(limits(sessions, mac('52:54:00:12:34:56'))).toEqual({
      expiresAt: undefined,
      idleTimeoutMs: undefined,
    });
    // A binding's end is fixed: a later date (or none) never pushes it back.
    expect(limits(sessions, ip('fd00::5'))).toEqual({
      expiresAt: midnight(2026, 4, 1),
      idleTimeoutMs: 60 * MINUTE,
    });
  });

  it('a binding with a MAC: a shorter idle limit brings its fixed end forward from its start, a longer one never pushes it back', async () => {
    const { settings, sessions } = setup();
    const binding = {
      key: ip('fd00::5'),
      username: 'carol',
      source: 'registration',
      mac: '52:54:00:12:34:56',
      idleTimeoutMs: 30 * MINUTE,
      lifetimeMs: 30 * MINUTE,
    } as const;
    sessions.start(binding);
    clock.advance(5 * MINUTE);
    await settings.save(base({ mode: 'registration', idleTimeoutMinutes: 10 }));
    expect(limits(sessions, ip('fd00::5'))).toEqual({
      expiresAt: T0 + 10 * MINUTE,
      idleTimeoutMs: 10 * MINUTE,
    });
    await settings.update({ idleTimeoutMinutes: 120 });
    expect(limits(sessions, ip('fd00::5'))).toEqual({
      expiresAt: T0 + 10 * MINUTE,
      idleTimeoutMs: 120 * MINUTE,
    });
  });

  it('a shorter hard limit ends a session older than it at once', async () => {
    const { settings, sessions } = setup();
    sessions.start({
      key: ip('10.0.0.1'),
      username: 'alice',
      source: 'portal',
      expiresAt: T0 + 480 * MINUTE,
    });
    clock.advance(90 * MINUTE);
    await settings.save(base({ hardTimeoutMinutes: 60 }));
    expect(sessions.find(ip('10.0.0.1'))).toBeUndefined();
  });

  it('a longer limit never brings back a session that has ended by the old one', async () => {
    const { settings, sessions } = setup();
    sessions.start({ key: ip('10.0.0.1'), username: 'hard', source: 'portal', expiresAt: T0 + 30 * MINUTE });
    sessions.start({ key: ip('10.0.0.2'), username: 'idle', source: 'portal', idleTimeoutMs: 10 * MINUTE });
    sessions.start({ key: ip('10.0.0.3'), username: 'busy', source: 'portal', idleTimeoutMs: 10 * MINUTE });
    sessions.start({
      key: mac('52:54:00:12:34:56'),
      username: 'reg',
      source: 'registration',
      expiresAt: T0 + 30 * MINUTE,
    });
    clock.advance(40 * MINUTE);
    sessions.touch(new Map([[sessions.find(ip('10.0.0.3'))?.id ?? 0, clock.now() - MINUTE]]));

    await settings.save(
      base({ idleTimeoutMinutes: 120, hardTimeoutMinutes: null, registrationClearDate: '2026-12-01' }),
    );
    expect(sessions.find(ip('10.0.0.1'))).toBeUndefined();
    expect(sessions.find(mac('52:54:00:12:34:56'))).toBeUndefined();
    // Idle past its limit by what the DB knows: keeps the limit it had; a live one gets the longer one.
    expect(limits(sessions, ip('10.0.0.2'))).toEqual({ expiresAt: undefined, idleTimeoutMs: 10 * MINUTE });
    expect(limits(sessions, ip('10.0.0.3'))).toEqual({ expiresAt: undefined, idleTimeoutMs: 120 * MINUTE });
    await settings.update({ idleTimeoutMinutes: null });
    expect(limits(sessions, ip('10.0.0.2'))).toEqual({ expiresAt: undefined, idleTimeoutMs: 10 * MINUTE });
    expect(limits(sessions, ip('10.0.0.3'))).toEqual({ expiresAt: undefined, idleTimeoutMs: undefined });
  });

  it('a clear date that has passed leaves the registrations made since without an end', async () => {
    const { settings, sessions } = setup();
    await settings.save(base({ mode: 'registration', registrationClearDate: '2026-03-11' }));
    clock.set(midnight(2026, 3, 20));
    sessions.start({ key: mac('52:54:00:12:34:56'), username: 'carol', source: 'registration' });
    expect(await settings.update({ policyText: 'Be kind.' })).toMatchObject({ ok: true });
    expect(limits(sessions, mac('52:54:00:12:34:56'))).toEqual({
      expiresAt: undefined,
      idleTimeoutMs: undefined,
    });
  });

  it('a save with problems changes no session', async () => {
    const { settings, sessions } = setup();
    sessions.start({ key: ip('10.0.0.1'), username: 'alice', source: 'portal', idleTimeoutMs: 60 * MINUTE });
    const result = await settings.save(base({ idleTimeoutMinutes: 5, hardTimeoutMinutes: 0 }));
    expect(result.ok).toBe(false);
    expect(limits(sessions, ip('10.0.0.1'))).toEqual({ expiresAt: undefined, idleTimeoutMs: 60 * MINUTE });
  });

  it('the session helper answers by the new limits at its next batch, without a restart', async () => {
    const { settings, sessions } = setup();
    const helper = new SessionLookup(new SessionStore(tmp.connect(), clock), clock);
    const ask = (src: string) => {
      helper.refresh();
      const reply = helper.handle({ channel: '1', fields: [src, '-', '-'] });
      return reply.result;
    };
    const alice: Session = sessions.start({
      key: ip('10.0.0.1'),
      username: 'alice',
      source: 'portal',
      expiresAt: T0 + 480 * MINUTE,
    });
    clock.advance(61 * MINUTE);
    expect(ask('10.0.0.1')).toBe('OK');
    await settings.save(base({ hardTimeoutMinutes: 60 }));
    expect(ask('10.0.0.1')).toBe('ERR');
    expect(alice.createdAt).toBe(T0);
  });
});
