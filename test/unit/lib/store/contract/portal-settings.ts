import { describe, expect, it } from 'vitest';
import { DEFAULT_PORTAL_SETTINGS, type PortalSettings } from '../../../../../lib/portal/settings.ts';
import type { SessionKey } from '../../../../../lib/store/session.ts';
import type { Box, ContractStore, OpenSite } from './site.ts';
import { ip, mac } from '../../../../support/session-keys.ts';

/**
 * The captive portal settings' contract (PortalSettingsRepository), whichever engine: what
 * PortalSettingsStore's own tests prove on SQLite, through the interface, on a site of boxes sharing one
 * store, the limits a save gives the open sessions included.
 */

/** Midday, so the server-local date is 2026-03-10 in any time zone within ±12 h. */
const T0 = Date.UTC(2026, 2, 10, 12);
const MINUTE = 60_000;
/** The sign-in modes need an applied directory: these tests say one is (the last one checks the default). */
const directoryApplied = () => true;

type Needs = Pick<ContractStore, 'portal' | 'directory' | 'sessions'>;

export function describePortalSettings(openSite: OpenSite<Needs>): void {
  const one = async (options: { leastIdleSeconds?: number } = {}) => {
    const site = await openSite({ now: T0 });
    const box = await site.box({ directoryApplied, ...options });
    return { site, clock: site.clock, box, portal: box.store.portal, sessions: box.store.sessions };
  };

  describe('portal settings', () => {
    it('load() gives the defaults (mode off) and version 0 until something is saved', async () => {
      const { portal } = await one();
      expect(portal.load()).toEqual(DEFAULT_PORTAL_SETTINGS);
      expect(portal.version()).toBe(0);
    });

    it('refuses an idle timeout shorter than the configuration lets helpers measure, and writes nothing', async () => {
      // 2 × lastSeenFlushSeconds (30) + squid.ttl (5): 65 s, so 2 minutes is the least.
      const { portal } = await one({ leastIdleSeconds: 65 });
      const short = await portal.update({ mode: 'authentication', idleTimeoutMinutes: 1 });
      expect(short.ok).toBe(false);
      expect(!short.ok && short.problems).toEqual([
        {
          field: 'idleTimeoutMinutes',
          message: expect.stringMatching(/^1 is shorter .* at least 2 minutes/),
        },
      ]);
      expect(portal.version()).toBe(0);
      expect(await portal.update({ mode: 'authentication', idleTimeoutMinutes: 2 })).toMatchObject({
        ok: true,
      });
      expect(await portal.update({ idleTimeoutMinutes: null })).toMatchObject({ ok: true });
    });

    it('save() stores valid settings; every save raises the version, even with the clock standing still', async () => {
      const { site, clock, portal } = await one();
      const first = await portal.save({ ...DEFAULT_PORTAL_SETTINGS, mode: 'authentication' });
      expect(first).toMatchObject({ ok: true, changed: ['mode'], previous: DEFAULT_PORTAL_SETTINGS });
      const v1 = portal.version();
      expect(v1).toBeGreaterThan(0);
      expect(first.ok && first.version).toBe(v1);
      const again = await portal.save({ ...DEFAULT_PORTAL_SETTINGS, mode: 'authentication' });
      expect(again).toMatchObject({ ok: true, changed: [] });
      expect(portal.version()).toBeGreaterThan(v1);
      clock.advance(-60_000);
      const v2 = portal.version();
      await portal.save(DEFAULT_PORTAL_SETTINGS);
      expect(portal.version()).toBeGreaterThan(v2);
      // Another box sees the settings and the version.
      const other = await site.box();
      expect(other.store.portal.load()).toEqual(DEFAULT_PORTAL_SETTINGS);
      expect(other.store.portal.version()).toBe(portal.version());
    });

    it('a save on one box is in force on the others once they have caught up', async () => {
      const { site, box, portal } = await one();
      const other = await site.box({ directoryApplied });
      const saved = await other.store.portal.update({ mode: 'agreement', policyText: 'Be kind.' });
      await box.sync();
      expect(portal.load()).toMatchObject({ mode: 'agreement', policyText: 'Be kind.' });
      expect(portal.version()).toBe(saved.ok && saved.version);
    });

    it('a save with problems writes nothing and lists every problem', async () => {
      const { portal } = await one();
      const result = await portal.save({
        ...DEFAULT_PORTAL_SETTINGS,
        mode: 'agreement',
        idleTimeoutMinutes: 0,
      });
      expect(result.ok).toBe(false);
      expect(!result.ok && result.problems.map((p) => p.field)).toEqual(['idleTimeoutMinutes', 'policyText']);
      expect(portal.version()).toBe(0);
      expect(portal.load()).toEqual(DEFAULT_PORTAL_SETTINGS);
    });

    it('update() changes only the fields given (walled-garden lists one by one), keeping the rest', async () => {
      const { portal } = await one();
      await portal.update({ mode: 'registration', walledGarden: { hosts: ['Example.com'] } });
      const result = await portal.update({
        walledGarden: { cidrs: ['10.0.0.1/8'] },
        hardTimeoutMinutes: undefined,
      });
      expect(result).toMatchObject({ ok: true, changed: ['walledGarden'] });
      expect(portal.load()).toEqual({
        ...DEFAULT_PORTAL_SETTINGS,
        mode: 'registration',
        walledGarden: { hosts: ['example.com'], cidrs: ['10.0.0.0/8'] },
      });
    });

    it('update() starts from what another box saved, not undoing it', async () => {
      const { site, portal } = await one();
      const other = await site.box({ directoryApplied });
      await other.store.portal.update({ policyText: 'Be kind.' });
      // This box's copy may not have it yet: the update reads the settings in force when it runs.
      await portal.update({ mode: 'agreement' });
      expect(portal.load()).toMatchObject({ mode: 'agreement', policyText: 'Be kind.' });
    });

    it('a clear date set or changed must lie after today (local); a passed one already stored is kept', async () => {
      const { clock, portal } = await one();
      const today = await portal.update({ registrationClearDate: '2026-03-10', idleTimeoutMinutes: 0 });
      expect(!today.ok && today.problems.map((p) => p.field)).toEqual([
        'idleTimeoutMinutes',
        'registrationClearDate',
      ]);
      expect(await portal.update({ registrationClearDate: '2026-03-11' })).toMatchObject({ ok: true });
      clock.advance(30 * 86_400_000);
      // The date has passed: other fields can still be saved...
      expect(await portal.update({ mode: 'registration' })).toMatchObject({ ok: true });
      // ...but it cannot be moved to another past day.
      const moved = await portal.update({ registrationClearDate: '2026-03-12' });
      expect(!moved.ok && moved.problems[0]?.message).toMatch(/is not in the future/);
      expect(await portal.update({ registrationClearDate: null })).toMatchObject({ ok: true });
    });

    it('refuses the sign-in modes while the store holds no applied directory, and saves them once it does', async () => {
      const site = await openSite({ now: T0 });
      const box = await site.box();
      const { portal } = box.store;
      for (const mode of ['authentication', 'registration']) {
        const refused = await portal.update({ mode });
        expect(!refused.ok && refused.problems).toEqual([
          {
            field: 'mode',
            message:
              `"${mode}" signs users in with a directory account, and no directory is applied: ` +
              'apply one first (the Directory screen, or doorman directory set)',
          },
        ]);
      }
      expect(portal.version()).toBe(0);
      expect(await portal.update({ mode: 'agreement', policyText: 'Be kind.' })).toMatchObject({ ok: true });
      // Save & apply on another box writes the directory's row: from then on the modes are taken here too.
      const other = await site.box();
      const applied = await other.store.directory.apply(
        {
          kind: 'open-directory',
          host: 'ldap.example.test',
          baseDn: 'dc=example,dc=test',
          bindDn: 'cn=squid,ou=services,dc=example,dc=test',
          transport: 'starttls',
        },
        'B1ndPassw0rd!',
        { test: async () => ({ ok: true, groupCount: 1 }) },
      );
      expect(applied).toMatchObject({ ok: true });
      expect(await portal.update({ mode: 'registration' })).toMatchObject({ ok: true });
      expect(portal.load().mode).toBe('registration');
    });
  });

  describe('a save applies the new limits to the portal sessions already open', () => {
    /** Server local midnight, whatever TZ the tests run in. */
    const midnight = (y: number, m: number, d: number) => new Date(y, m - 1, d).getTime();
    /** A live session's limits as the box that saved has them: at once, once its save has resolved. */
    const limits = (box: Box<Needs>, key: SessionKey) => {
      const found = box.store.sessions.find(key);
      return found && { expiresAt: found.expiresAt, idleTimeoutMs: found.idleTimeoutMs };
    };
    const base = (fields: Partial<PortalSettings>): PortalSettings => ({
      ...DEFAULT_PORTAL_SETTINGS,
      mode: 'authentication',
      ...fields,
    });

    it('portal and agreement: the new idle limit, and created_at + the new hard limit; API sessions keep theirs', async () => {
      const { box, clock, portal, sessions } = await one();
      await sessions.start({
        key: ip('10.0.0.1'),
        username: 'alice',
        source: 'portal',
        expiresAt: T0 + 480 * MINUTE,
        idleTimeoutMs: 60 * MINUTE,
      });
      clock.advance(10 * MINUTE);
      await sessions.start({
        key: ip('10.0.0.2'),
        username: 'agreement:Lab',
        source: 'agreement',
        expiresAt: T0 + 490 * MINUTE,
        idleTimeoutMs: 60 * MINUTE,
      });
      await sessions.start({
        key: ip('10.0.0.3'),
        username: 'bob',
        source: 'api',
        expiresAt: T0 + 999 * MINUTE,
        idleTimeoutMs: 5 * MINUTE,
      });

      const saved = await portal.save(base({ idleTimeoutMinutes: 15, hardTimeoutMinutes: 120 }));
      expect(saved).toMatchObject({ ok: true, sessionsUpdated: 2 });
      expect(limits(box, ip('10.0.0.1'))).toEqual({
        expiresAt: T0 + 120 * MINUTE,
        idleTimeoutMs: 15 * MINUTE,
      });
      expect(limits(box, ip('10.0.0.2'))).toEqual({
        expiresAt: T0 + 130 * MINUTE,
        idleTimeoutMs: 15 * MINUTE,
      });
      expect(limits(box, ip('10.0.0.3'))).toEqual({
        expiresAt: T0 + 999 * MINUTE,
        idleTimeoutMs: 5 * MINUTE,
      });

      await portal.update({ idleTimeoutMinutes: null, hardTimeoutMinutes: null });
      expect(limits(box, ip('10.0.0.1'))).toEqual({
        expiresAt: undefined,
        idleTimeoutMs: undefined,
      });
      expect(limits(box, ip('10.0.0.2'))).toEqual({
        expiresAt: undefined,
        idleTimeoutMs: undefined,
      });
      expect(limits(box, ip('10.0.0.3'))).toEqual({
        expiresAt: T0 + 999 * MINUTE,
        idleTimeoutMs: 5 * MINUTE,
      });
    });

    it('registrations: the start of the new clear date; their address bindings that date and the idle limit (60 min if none)', async () => {
      const { box, portal, sessions } = await one();
      await sessions.start({
        key: mac('52:54:00:12:34:56'),
        username: 'carol',
        source: 'registration',
        expiresAt: midnight(2026, 5, 1),
      });
      await sessions.start({
        key: ip('fd00::5'),
        username: 'carol',
        source: 'registration',
        expiresAt: midnight(2026, 5, 1),
        idleTimeoutMs: 30 * MINUTE,
      });

      await portal.save(
        base({ mode: 'registration', idleTimeoutMinutes: 10, registrationClearDate: '2026-04-01' }),
      );
      expect(limits(box, mac('52:54:00:12:34:56'))).toEqual({
        expiresAt: midnight(2026, 4, 1),
        idleTimeoutMs: undefined,
      });
      expect(limits(box, ip('fd00::5'))).toEqual({
        expiresAt: midnight(2026, 4, 1),
        idleTimeoutMs: 10 * MINUTE,
      });

      await portal.update({ idleTimeoutMinutes: null, registrationClearDate: null });
      expect(limits(box, mac('52:54:00:12:34:56'))).toEqual({
        expiresAt: undefined,
        idleTimeoutMs: undefined,
      });
      // A binding's end is fixed: a later date (or none) never pushes it back.
      expect(limits(box, ip('fd00::5'))).toEqual({
        expiresAt: midnight(2026, 4, 1),
        idleTimeoutMs: 60 * MINUTE,
      });
    });

    it('a binding with a MAC: a shorter idle limit brings its fixed end forward from its start, a longer one never pushes it back', async () => {
      const { box, clock, portal, sessions } = await one();
      await sessions.start({
        key: ip('fd00::5'),
        username: 'carol',
        source: 'registration',
        mac: '52:54:00:12:34:56',
        idleTimeoutMs: 30 * MINUTE,
        lifetimeMs: 30 * MINUTE,
      });
      clock.advance(5 * MINUTE);
      await portal.save(base({ mode: 'registration', idleTimeoutMinutes: 10 }));
      expect(limits(box, ip('fd00::5'))).toEqual({
        expiresAt: T0 + 10 * MINUTE,
        idleTimeoutMs: 10 * MINUTE,
      });
      await portal.update({ idleTimeoutMinutes: 120 });
      expect(limits(box, ip('fd00::5'))).toEqual({
        expiresAt: T0 + 10 * MINUTE,
        idleTimeoutMs: 120 * MINUTE,
      });
    });

    it('a binding without an end keeps none, whatever the limits', async () => {
      const { box, portal, sessions } = await one();
      await sessions.start({
        key: ip('fd00::6'),
        username: 'dave',
        source: 'registration',
        mac: '52:54:00:12:34:57',
        idleTimeoutMs: 30 * MINUTE,
      });
      await portal.save(
        base({ mode: 'registration', idleTimeoutMinutes: 10, registrationClearDate: '2026-04-01' }),
      );
      expect(limits(box, ip('fd00::6'))).toEqual({
        expiresAt: undefined,
        idleTimeoutMs: 10 * MINUTE,
      });
    });

    it('a shorter hard limit ends a session older than it at once', async () => {
      const { box, clock, portal, sessions } = await one();
      await sessions.start({
        key: ip('10.0.0.1'),
        username: 'alice',
        source: 'portal',
        expiresAt: T0 + 480 * MINUTE,
      });
      clock.advance(90 * MINUTE);
      await portal.save(base({ hardTimeoutMinutes: 60 }));
      expect(limits(box, ip('10.0.0.1'))).toBeUndefined();
    });

    it('a longer limit never brings back a session that has ended by the old one', async () => {
      const { box, clock, portal, sessions } = await one();
      await sessions.start({
        key: ip('10.0.0.1'),
        username: 'hard',
        source: 'portal',
        expiresAt: T0 + 30 * MINUTE,
      });
      await sessions.start({
        key: ip('10.0.0.2'),
        username: 'idle',
        source: 'portal',
        idleTimeoutMs: 10 * MINUTE,
      });
      const busy = await sessions.start({
        key: ip('10.0.0.3'),
        username: 'busy',
        source: 'portal',
        idleTimeoutMs: 10 * MINUTE,
      });
      await sessions.start({
        key: mac('52:54:00:12:34:56'),
        username: 'reg',
        source: 'registration',
        expiresAt: T0 + 30 * MINUTE,
      });
      clock.advance(40 * MINUTE);
      await sessions.touch(new Map([[busy.id, clock.now() - MINUTE]]));

      await portal.save(
        base({ idleTimeoutMinutes: 120, hardTimeoutMinutes: null, registrationClearDate: '2026-12-01' }),
      );
      expect(limits(box, ip('10.0.0.1'))).toBeUndefined();
      expect(limits(box, mac('52:54:00:12:34:56'))).toBeUndefined();
      // Idle past its limit by what the store knows: keeps the limit it had; a live one gets the longer one.
      expect(limits(box, ip('10.0.0.2'))).toEqual({
        expiresAt: undefined,
        idleTimeoutMs: 10 * MINUTE,
      });
      expect(limits(box, ip('10.0.0.3'))).toEqual({
        expiresAt: undefined,
        idleTimeoutMs: 120 * MINUTE,
      });
      await portal.update({ idleTimeoutMinutes: null });
      expect(limits(box, ip('10.0.0.2'))).toEqual({
        expiresAt: undefined,
        idleTimeoutMs: 10 * MINUTE,
      });
      expect(limits(box, ip('10.0.0.3'))).toEqual({
        expiresAt: undefined,
        idleTimeoutMs: undefined,
      });
    });

    it('a clear date that has passed leaves the registrations made since without an end', async () => {
      const { box, clock, portal, sessions } = await one();
      await portal.save(base({ mode: 'registration', registrationClearDate: '2026-03-11' }));
      clock.set(midnight(2026, 3, 20));
      await sessions.start({ key: mac('52:54:00:12:34:56'), username: 'carol', source: 'registration' });
      expect(await portal.update({ policyText: 'Be kind.' })).toMatchObject({ ok: true });
      expect(limits(box, mac('52:54:00:12:34:56'))).toEqual({
        expiresAt: undefined,
        idleTimeoutMs: undefined,
      });
    });

    it('a save with problems changes no session', async () => {
      const { box, portal, sessions } = await one();
      await sessions.start({
        key: ip('10.0.0.1'),
        username: 'alice',
        source: 'portal',
        idleTimeoutMs: 60 * MINUTE,
      });
      const result = await portal.save(base({ idleTimeoutMinutes: 5, hardTimeoutMinutes: 0 }));
      expect(result.ok).toBe(false);
      expect(limits(box, ip('10.0.0.1'))).toEqual({
        expiresAt: undefined,
        idleTimeoutMs: 60 * MINUTE,
      });
    });
  });
}
