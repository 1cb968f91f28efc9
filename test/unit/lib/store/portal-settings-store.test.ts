import { beforeEach, describe, expect, it } from 'vitest';
import { SessionLookup } from '../../../../helpers/session-lookup.ts';
import { ManualClock } from '../../../../lib/clock.ts';
import { DEFAULT_PORTAL_SETTINGS, type PortalSettings } from '../../../../lib/portal/settings.ts';
import { StoreBusyError } from '../../../../lib/store/busy.ts';
import { PortalSettingsStore } from '../../../../lib/store/portal-settings-store.ts';
import { SessionStore } from '../../../../lib/store/session-store.ts';
import type { Session } from '../../../../lib/store/session.ts';
import { ManualTimers } from '../../../support/manual-timers.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { rejection, thrown } from '../../../support/thrown.ts';
import { ip } from '../../../support/session-keys.ts';

/**
 * What PortalSettingsStore does with a row it cannot read, while another process holds the write lock, and
 * how the session helper (reading the same file) follows a save. What every store does with the portal
 * settings is the contract (contract/portal-settings.ts), run on SQLite by sqlite-contract.test.ts.
 */

const tmp = useTempDb('doorman-portal-settings-');
let clock: ManualClock;
beforeEach(() => {
  // Midday, so the server-local date is 2026-03-10 in any time zone within ±12 h.
  clock = new ManualClock(Date.UTC(2026, 2, 10, 12));
});
/** The sign-in modes need an applied directory: these tests say one is. */
const directoryApplied = () => true;
const store = () => new PortalSettingsStore(tmp.connect(), { clock, directoryApplied });

describe('PortalSettingsStore', () => {
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
});

describe('a save and the session helper', () => {
  const MINUTE = 60_000;
  const T0 = Date.UTC(2026, 2, 10, 12);
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
