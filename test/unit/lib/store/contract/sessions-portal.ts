import { describe, expect, it } from 'vitest';
import { registrationSession } from '../../../../../lib/portal/portal-sessions.ts';
import { DEFAULT_PORTAL_SETTINGS, type PortalSettings } from '../../../../../lib/portal/settings.ts';
import type { OpenSite } from './site.ts';
import { ip, mac } from '../../../../support/session-keys.ts';
import { login, MINUTE, sites, T0, usersOf, type Needs } from './sessions.ts';

/**
 * The sessions' contract, continued (sessions.ts has the rest): what the splash page writes (a registration
 * with its address binding, a Usage Agreement decided by the Device Groups as written) and the change stamp
 * that every write moves, on this box at once and on another once it has caught up.
 */

/** A Usage Agreement's limits, as the portal settings give them. */
const agreement = { idleTimeoutMinutes: 60, hardTimeoutMinutes: 480 };

export function describePortalSessions(openSite: OpenSite<Needs>): void {
  const { one, two } = sites(openSite);

  describe('sessions: the splash page', () => {
    const settings = (over: Partial<PortalSettings> = {}): PortalSettings => ({
      ...structuredClone(DEFAULT_PORTAL_SETTINGS),
      ...over,
    });

    it('startPortal: a registration from an IPv6 client binds the address too; from IPv4, or on the address itself, nothing more', async () => {
      const { a, b } = await two();
      const { sessions } = a.store;
      const s = settings({ registrationClearDate: '2026-09-01', idleTimeoutMinutes: 15 });
      const v4 = await sessions.startPortal(registrationSession('02:00:00:00:00:01', 'bob', s, T0), {
        clientIp: '10.0.0.5',
        settings: s,
      });
      expect(v4.binding).toBeUndefined();
      const v6 = await sessions.startPortal(registrationSession('3c:22:fb:12:34:56', 'alice', s, T0), {
        clientIp: '2001:db8::5',
        settings: s,
      });
      expect(v6.session).toMatchObject({ key: mac('3c:22:fb:12:34:56'), username: 'alice' });
      // Its end is fixed, one idle timeout from now (before the clear date), and it names the device.
      expect(v6.binding).toMatchObject({
        key: ip('2001:db8::5'),
        username: 'alice',
        source: 'registration',
        mac: '3c:22:fb:12:34:56',
        expiresAt: T0 + 15 * MINUTE,
        idleTimeoutMs: 15 * MINUTE,
      });
      expect(sessions.find(ip('2001:db8::5'))).toEqual(v6.binding);
      const signedIn = await sessions.startPortal(
        { key: ip('2001:db8::6'), username: 'carol', source: 'portal' },
        { clientIp: '2001:db8::6', settings: s },
      );
      expect(signedIn.binding).toBeUndefined();
      expect(await usersOf(b)).toEqual({
        '2001:db8::5': 'alice',
        '2001:db8::6': 'carol',
        '02:00:00:00:00:01': 'bob',
        '3c:22:fb:12:34:56': 'alice',
      });
    });

    it('startAgreement: agreement:<group> for the first active Device Group holding the address; outside every one, nothing written', async () => {
      const { box, sessions } = await one();
      const { deviceGroups } = box.store;
      expect(await sessions.startAgreement('10.9.0.5', agreement)).toBeUndefined();
      await deviceGroups.create({ name: 'Off', cidrs: ['10.9.0.0/16'], active: false });
      await deviceGroups.create({ name: 'Library PCs', cidrs: ['10.9.0.0/16'] });
      const started = await sessions.startAgreement('10.9.0.5', agreement);
      expect(started?.group).toMatchObject({ name: 'Library PCs', cidrs: ['10.9.0.0/16'], active: true });
      expect(started?.session).toMatchObject({
        key: ip('10.9.0.5'),
        username: 'agreement:Library PCs',
        source: 'agreement',
        expiresAt: T0 + 480 * MINUTE,
        idleTimeoutMs: 60 * MINUTE,
      });
      expect(sessions.find(ip('10.9.0.5'))).toEqual(started?.session);
      expect(await sessions.startAgreement('10.8.0.5', agreement)).toBeUndefined();
      expect(await usersOf(box)).toEqual({ '10.9.0.5': 'agreement:Library PCs' });
    });

    it('startAgreement decides on the Device Groups as written, not as this box last saw them', async () => {
      const { a, b } = await two();
      const lab = await a.store.deviceGroups.create({ name: 'Lab', cidrs: ['10.9.0.0/24'] });
      await b.sync();
      // A switches the group off; B starts an agreement before it has caught up with that.
      await a.store.deviceGroups.setActive(lab.id, false);
      expect(await b.store.sessions.startAgreement('10.9.0.5', agreement)).toBeUndefined();
      expect(await usersOf(b)).toEqual({});
      await a.store.deviceGroups.setActive(lab.id, true);
      expect((await b.store.sessions.startAgreement('10.9.0.5', agreement))?.group.name).toBe('Lab');
    });
  });

  describe('sessions: changeStamp', () => {
    it('moves on every write of this box, and on another box once it has seen the write', async () => {
      const { a, b } = await two();
      const stamps = [a, b].map((box) => box.store.sessions.changeStamp());
      /** Each write moves both boxes' stamps: the writer's at once, the other's once caught up. */
      const moves = async (what: string, write: () => Promise<unknown>) => {
        await write();
        await b.sync();
        [a, b].forEach((box, i) => {
          const stamp = box.store.sessions.changeStamp();
          expect(stamp, `${what}: box ${i === 0 ? 'A' : 'B'}`).not.toBe(stamps[i]);
          stamps[i] = stamp;
        });
      };
      const { sessions } = a.store;
      const alice = await login(sessions, ip('10.0.0.9'), 'alice', T0 - 1);
      await b.sync();
      stamps.splice(0, 2, a.store.sessions.changeStamp(), b.store.sessions.changeStamp());
      await moves('start', () => login(sessions, ip('10.0.0.1'), 'bob'));
      await moves('touch', () => sessions.touch(new Map([[alice.id, T0 + 1]])));
      await moves('end', () => sessions.end(ip('10.0.0.1')));
      await moves('purgeExpired', () => sessions.purgeExpired());
      await moves('startPortal', () =>
        sessions.startPortal(
          { key: ip('10.0.0.2'), username: 'carol', source: 'portal' },
          { clientIp: '10.0.0.2', settings: DEFAULT_PORTAL_SETTINGS },
        ),
      );
      await moves('endBySource', () => sessions.endBySource(['portal']));
      const lab = await a.store.deviceGroups.create({ name: 'Lab', cidrs: ['10.9.0.0/24'] });
      await moves('startAgreement', () => sessions.startAgreement('10.9.0.5', agreement));
      // A Device Group change that ends an agreement is a session write too.
      await moves('a Device Group switched off', () => a.store.deviceGroups.setActive(lab.id, false));
      await login(sessions, ip('10.0.0.3'), 'dave');
      await b.sync();
      stamps.splice(0, 2, a.store.sessions.changeStamp(), b.store.sessions.changeStamp());
      await moves('clear', () => sessions.clear());
    });

    it('stays put while nothing is written', async () => {
      const { a, b } = await two();
      await login(a.store.sessions, ip('10.0.0.1'), 'alice');
      await a.sync();
      await b.sync();
      const stamps = [a, b].map((box) => box.store.sessions.changeStamp());
      a.store.sessions.find(ip('10.0.0.1'));
      b.store.sessions.list();
      await b.sync();
      expect([a, b].map((box) => box.store.sessions.changeStamp())).toEqual(stamps);
    });
  });
}
