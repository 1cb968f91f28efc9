import { describe, expect, it } from 'vitest';
import { DeviceGroupInputError } from '../../../../../lib/store/device-group-rules.ts';
import type { SessionRepository } from '../../../../../lib/store/store.ts';
import { rejection } from '../../../../support/thrown.ts';
import type { Box, ContractStore, OpenSite } from './site.ts';
import { ip } from '../../../../support/session-keys.ts';

/**
 * The Device Groups' contract (DeviceGroupRepository), whichever engine: what DeviceGroupStore's own tests
 * prove on SQLite, through the interface, on a site of boxes sharing one store, Usage Agreement sessions
 * included.
 */

type Needs = Pick<ContractStore, 'deviceGroups' | 'sessions'>;

export function describeDeviceGroups(openSite: OpenSite<Needs>): void {
  const one = async () => {
    const site = await openSite();
    const box = await site.box();
    return { site, clock: site.clock, box, groups: box.store.deviceGroups, sessions: box.store.sessions };
  };

  describe('Device Groups', () => {
    it('creates, lists in creation order, updates, deactivates and removes', async () => {
      const { groups } = await one();
      const lab = await groups.create({ name: 'Lab', cidrs: ['10.1.2.3/16'] });
      expect(lab).toEqual({ id: expect.any(Number), name: 'Lab', cidrs: ['10.1.0.0/16'], active: true });
      const guests = await groups.create({ name: 'Guests', cidrs: ['2001:db8::/48'], active: false });
      expect(groups.list().map((g) => g.name)).toEqual(['Lab', 'Guests']);
      expect(groups.get(guests.id)).toEqual(guests);
      expect(await groups.update(lab.id, { cidrs: ['10.2.0.0/16'] })).toEqual({
        ...lab,
        cidrs: ['10.2.0.0/16'],
        endedSessions: 0,
      });
      expect(await groups.setActive(guests.id, true)).toMatchObject({ name: 'Guests', active: true });
      expect(groups.findByName('LAB')?.id).toBe(lab.id);
      expect(await groups.remove(lab.id)).toMatchObject({ name: 'Lab' });
      expect(groups.list().map((g) => g.name)).toEqual(['Guests']);
      expect(groups.get(lab.id)).toBeUndefined();
      await expect(groups.remove(lab.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(groups.update(lab.id, { active: false })).rejects.toMatchObject({
        code: 'NOT_FOUND',
        message: `Device Group: there is no group with id ${lab.id}`,
      });
    });

    it('lists every bad field at once, and a name taken in another case is one of them', async () => {
      const { groups } = await one();
      await groups.create({ name: 'Straße Lab', cidrs: ['10.0.0.0/8'] });
      // ß upper-cases to SS: a different name
      expect(await rejection(groups.create({ name: 'STRASSE LAB', cidrs: ['10.0.0.0/8'] }))).toBeUndefined();
      const taken = await rejection(groups.create({ name: 'straße lab', cidrs: ['x'], active: 'yes' }));
      expect(taken).toBeInstanceOf(DeviceGroupInputError);
      expect((taken as DeviceGroupInputError).problems).toEqual([
        { field: 'cidrs.0', message: expect.stringContaining('"x" is not an IPv4 or IPv6 address') },
        { field: 'active', message: 'must be true or false (given: "yes")' },
        { field: 'name', message: '"straße lab" is taken by the group "Straße Lab"' },
      ]);
      // Beyond ASCII, which SQLite's NOCASE does not fold.
      await groups.create({ name: 'Été', cidrs: ['10.0.0.0/8'] });
      await expect(groups.create({ name: 'ÉTÉ', cidrs: ['10.0.0.0/8'] })).rejects.toBeInstanceOf(
        DeviceGroupInputError,
      );
      // Renaming a group to its own name in another case is fine.
      const ete = groups.findByName('été');
      expect(await groups.update(ete?.id ?? 0, { name: 'ÉTÉ' })).toMatchObject({ name: 'ÉTÉ' });
      expect(groups.list()).toHaveLength(3);
    });

    it('activeGroupFor: the first active group holding the address, IPv6 and mapped IPv4 included', async () => {
      const { groups } = await one();
      const a = await groups.create({ name: 'A', cidrs: ['10.0.0.0/8'], active: false });
      await groups.create({ name: 'B', cidrs: ['10.1.0.0/16', '2001:db8::/32'] });
      await groups.create({ name: 'C', cidrs: ['10.1.2.0/24', '192.168.0.7'] });
      expect(groups.activeGroupFor('10.1.2.3')?.name).toBe('B');
      expect(groups.activeGroupFor('::ffff:10.1.2.3')?.name).toBe('B');
      expect(groups.activeGroupFor('2001:db8:1::5')?.name).toBe('B');
      expect(groups.activeGroupFor('192.168.0.7')?.name).toBe('C');
      expect(groups.activeGroupFor('10.9.9.9')).toBeUndefined();
      expect(groups.activeGroupFor('not an ip')).toBeUndefined();
      await groups.setActive(a.id, true);
      expect(groups.activeGroupFor('10.1.2.3')?.name).toBe('A');
      expect(groups.activeGroupFor('10.9.9.9')?.name).toBe('A');
    });

    it("activeGroupFor sees another box's change", async () => {
      const { site, box, groups } = await one();
      expect(groups.activeGroupFor('10.0.0.1')).toBeUndefined();
      const writer = (await site.box()).store.deviceGroups;
      const g = await writer.create({ name: 'Lab', cidrs: ['10.0.0.0/24'] });
      await box.sync();
      expect(groups.activeGroupFor('10.0.0.1')?.name).toBe('Lab');
      await writer.setActive(g.id, false);
      await box.sync();
      expect(groups.activeGroupFor('10.0.0.1')).toBeUndefined();
    });

    it('what a reader gets is its own: changing it changes nothing held', async () => {
      const { groups } = await one();
      const lab = await groups.create({ name: 'Lab', cidrs: ['10.0.0.0/8'] });
      const got = groups.get(lab.id);
      got?.cidrs.push('192.168.0.0/16');
      expect(groups.list()[0]?.cidrs).toEqual(['10.0.0.0/8']);
      expect(groups.activeGroupFor('192.168.0.1')).toBeUndefined();
    });
  });

  describe('Usage Agreement sessions follow the active groups', () => {
    const agree = (sessions: SessionRepository, address: string, group: string) =>
      sessions.start({ key: ip(address), username: `agreement:${group}`, source: 'agreement' });
    /**
     * The box's live sessions, without waiting: the box that made the change reads what it did to the
     * sessions as soon as its write has resolved.
     */
    const users = (box: Box<Needs>) =>
      Object.fromEntries(box.store.sessions.list().map((x) => [x.key.value, x.username]));

    it('deactivating a group ends the agreements of its addresses, and only those; the count is returned', async () => {
      const { box, groups, sessions } = await one();
      const lab = await groups.create({ name: 'Lab', cidrs: ['10.1.0.0/16'] });
      await groups.create({ name: 'Library', cidrs: ['10.2.0.0/16', '2001:db8::/32'] });
      await agree(sessions, '10.1.0.5', 'Lab');
      await agree(sessions, '10.1.0.6', 'Lab');
      await agree(sessions, '10.2.0.5', 'Library');
      await agree(sessions, '2001:db8::5', 'Library');
      // Other ways in on addresses of the group are not agreements: they stay.
      await sessions.start({ key: ip('10.1.0.7'), username: 'alice', source: 'portal' });
      await sessions.start({ key: ip('10.1.0.8'), username: 'bob', source: 'api' });
      await sessions.start({ key: ip('10.1.0.9'), username: 'carol', source: 'registration' });
      await sessions.start({
        key: { kind: 'mac', value: '52:54:00:12:34:56' },
        username: 'dave',
        source: 'registration',
      });

      expect(await groups.setActive(lab.id, false)).toMatchObject({
        name: 'Lab',
        active: false,
        endedSessions: 2,
      });
      expect(users(box)).toEqual({
        '10.1.0.7': 'alice',
        '10.1.0.8': 'bob',
        '10.1.0.9': 'carol',
        '10.2.0.5': 'agreement:Library',
        '2001:db8::5': 'agreement:Library',
        '52:54:00:12:34:56': 'dave',
      });
      // Turning it on again starts nothing: the devices accept the policy again.
      expect(await groups.setActive(lab.id, true)).toMatchObject({ endedSessions: 0 });
      expect(Object.keys(users(box))).not.toContain('10.1.0.5');
    });

    it('new networks end the agreements of addresses left out; removing a group ends the rest', async () => {
      const { box, groups, sessions } = await one();
      const lab = await groups.create({ name: 'Lab', cidrs: ['10.1.0.0/16'] });
      await agree(sessions, '10.1.1.5', 'Lab');
      await agree(sessions, '10.1.2.5', 'Lab');
      expect(await groups.update(lab.id, { cidrs: ['10.1.1.0/24'] })).toMatchObject({ endedSessions: 1 });
      expect(users(box)).toEqual({ '10.1.1.5': 'agreement:Lab' });
      expect(await groups.remove(lab.id)).toMatchObject({ name: 'Lab', endedSessions: 1 });
      expect(users(box)).toEqual({});
    });

    it('an address still in another active group keeps its session, under that group name; a renamed group renames its sessions', async () => {
      const { box, groups, sessions } = await one();
      const lab = await groups.create({ name: 'Lab', cidrs: ['10.1.0.0/16'] });
      const campus = await groups.create({ name: 'Campus', cidrs: ['10.0.0.0/8'] });
      await agree(sessions, '10.1.0.5', 'Lab');
      await agree(sessions, '10.3.0.5', 'Campus');
      expect(await groups.remove(lab.id)).toMatchObject({ endedSessions: 0 });
      expect(users(box)).toEqual({
        '10.1.0.5': 'agreement:Campus',
        '10.3.0.5': 'agreement:Campus',
      });
      expect(await groups.update(campus.id, { name: 'Whole campus' })).toMatchObject({ endedSessions: 0 });
      expect(users(box)).toEqual({
        '10.1.0.5': 'agreement:Whole campus',
        '10.3.0.5': 'agreement:Whole campus',
      });
    });

    it('counts only live sessions; a change that fails validation ends nothing', async () => {
      const { box, clock, groups, sessions } = await one();
      const lab = await groups.create({ name: 'Lab', cidrs: ['10.1.0.0/16'] });
      await sessions.start({
        key: ip('10.1.0.5'),
        username: 'agreement:Lab',
        source: 'agreement',
        expiresAt: clock.now() + 1000,
      });
      await agree(sessions, '10.1.0.6', 'Lab');
      await expect(groups.update(lab.id, { cidrs: ['bogus'], active: false })).rejects.toBeInstanceOf(
        DeviceGroupInputError,
      );
      expect(Object.keys(users(box))).toEqual(['10.1.0.5', '10.1.0.6']);
      clock.advance(1000);
      expect(await groups.setActive(lab.id, false)).toMatchObject({ endedSessions: 1 });
    });
  });
}
