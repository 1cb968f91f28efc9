import { describe, expect, it } from 'vitest';
import type { AuditInput, AuditRecord } from '../../../../../lib/audit/event.ts';
import type { AuditQuery } from '../../../../../lib/audit/query.ts';
import type { AuditRepository } from '../../../../../lib/store/store.ts';
import { registrationSession } from '../../../../../lib/portal/portal-sessions.ts';
import { DEFAULT_PORTAL_SETTINGS } from '../../../../../lib/portal/settings.ts';
import { rejection } from '../../../../support/thrown.ts';
import type { ContractStore, OpenSite } from './site.ts';
import { ip, mac } from '../../../../support/session-keys.ts';
import { MINUTE, T0 } from './sessions.ts';

/**
 * The audit trail's contract (AuditRepository, and the `audit` arguments of the session writes), whichever
 * engine: an event exists if and only if the change it describes committed, is stamped with the writing
 * box's name and clock, is shipped once committed, and reads back newest first in keyset pages.
 */

type Needs = Pick<ContractStore, 'sessions' | 'deviceGroups' | 'audit'>;

const login = (user: string, address: string, actor = 'api-key:wifi'): AuditInput => ({
  kind: 'api.login',
  actor,
  user,
  address,
});

/** Every event the query finds, page by page (`limit` a page). */
async function all(audit: AuditRepository, query: Omit<AuditQuery, 'limit'> = {}, limit = 200) {
  const found = [];
  let before = query.before;
  for (;;) {
    const page = await audit.list({ ...query, ...(before === undefined ? {} : { before }), limit });
    found.push(...page.events);
    if (page.next === undefined) return found;
    before = page.next;
  }
}

export function describeAudit(openSite: OpenSite<Needs>): void {
  const one = async (ship?: (records: readonly AuditRecord[]) => void) => {
    const site = await openSite({ now: T0 });
    const box = await site.box({ name: 'proxy1', ...(ship === undefined ? {} : { ship }) });
    return { site, clock: site.clock, box, store: box.store };
  };

  describe('audit trail', () => {
    it('a session write records its events with it, stamped with the box and the time, shipped once committed', async () => {
      const shipped: AuditRecord[] = [];
      const { store, clock } = await one((records) => shipped.push(...records));
      clock.advance(5000);
      const session = await store.sessions.start(
        { key: ip('10.0.0.5'), username: 'alice', source: 'api' },
        login('alice', '10.0.0.5'),
      );
      expect(session.username).toBe('alice');
      const expected = {
        at: T0 + 5000,
        box: 'proxy1',
        kind: 'api.login',
        actor: 'api-key:wifi',
        user: 'alice',
        address: '10.0.0.5',
        detail: {},
      };
      expect(shipped).toEqual([expected]);
      const page = await store.audit.list({ limit: 10 });
      expect(page).toEqual({ events: [{ id: expect.any(Number), ...expected }], next: undefined });
    });

    it('a write that fails records nothing and ships nothing; one that writes nothing (no group) neither', async () => {
      const shipped: AuditRecord[] = [];
      const { store } = await one((records) => shipped.push(...records));
      const bad = { key: ip('10.0.0.5'), username: 'alice', source: 'nonsense' as 'api' };
      expect(await rejection(store.sessions.start(bad, login('alice', '10.0.0.5')))).toBeDefined();
      const agreed = await store.sessions.startAgreement(
        '10.9.9.9',
        { idleTimeoutMinutes: null, hardTimeoutMinutes: null },
        { kind: 'portal.agreement', actor: 'user:agreement', address: '10.9.9.9' },
      );
      expect(agreed).toBeUndefined();
      expect(shipped).toEqual([]);
      expect((await store.audit.list({ limit: 10 })).events).toEqual([]);
    });

    it("a login is given the session it replaces as the database has it, even another box's this box has not caught up with", async () => {
      const { site, box: a } = await one();
      const b = await site.box({ name: 'proxy2' });
      await a.store.sessions.start({ key: ip('10.0.0.9'), username: 'alice', source: 'api' });
      // B has not caught up with alice's login: what it replaces is still known.
      const given: Array<string | undefined> = [];
      await b.store.sessions.start(
        { key: ip('10.0.0.9'), username: 'bob', source: 'api' },
        (previous) => (given.push(previous?.username), login('bob', '10.0.0.9')),
      );
      const started = await b.store.sessions.startPortal(
        { key: ip('10.0.0.9'), username: 'carol', source: 'portal' },
        { clientIp: '10.0.0.9', settings: { idleTimeoutMinutes: null, hardTimeoutMinutes: null } as never },
        (previous) => (given.push(previous?.username), login('carol', '10.0.0.9')),
      );
      expect(given).toEqual(['alice', 'bob']);
      expect(started.replaced).toEqual({ username: 'bob', source: 'api' });
    });

    it('a login is given no session for a new key, a renewal (the same user by the same way in) or an expired session, and the one it takes from another user or by another way in', async () => {
      const { store, clock } = await one();
      const given: Array<string | undefined> = [];
      const start = (username: string, source: 'api' | 'portal', expiresAt?: number) =>
        store.sessions.start(
          { key: ip('10.0.0.4'), username, source, ...(expiresAt === undefined ? {} : { expiresAt }) },
          (previous) => (
            given.push(previous === undefined ? undefined : `${previous.username}/${previous.source}`),
            login(username, '10.0.0.4')
          ),
        );
      const first = await start('alice', 'api');
      clock.advance(1000);
      const renewed = await start('alice', 'api', clock.now() + MINUTE);
      expect(renewed.createdAt).toBe(first.createdAt + 1000);
      expect(renewed.expiresAt).toBe(clock.now() + MINUTE);
      await start('bob', 'api', clock.now() + MINUTE);
      await start('bob', 'portal', clock.now() + MINUTE);
      clock.advance(2 * MINUTE);
      await start('bob', 'portal');
      expect(given).toEqual([undefined, undefined, 'alice/api', 'bob/api', undefined]);
      expect(store.sessions.find(ip('10.0.0.4'))).toMatchObject({ username: 'bob', source: 'portal' });
      expect(store.sessions.find(ip('10.0.0.4'))?.expiresAt).toBeUndefined();
      const kinds = (await store.audit.list({ limit: 10 })).events.map((e) => e.kind).reverse();
      expect(kinds).toEqual(['api.login', 'api.login', 'api.login', 'api.login', 'api.login']);
    });

    it('a splash sign-in is given the live session it replaces on its key, read in its write, and returns it', async () => {
      const { store } = await one();
      const settings = { idleTimeoutMinutes: null, hardTimeoutMinutes: null } as never;
      await store.sessions.start({ key: ip('10.0.0.7'), username: 'alice', source: 'api' });
      const given: Array<string | undefined> = [];
      const started = await store.sessions.startPortal(
        { key: ip('10.0.0.7'), username: 'bob', source: 'portal' },
        { clientIp: '10.0.0.7', settings },
        (previous) => (
          given.push(previous?.username),
          {
            kind: 'portal.sign-in',
            actor: 'user:bob',
            user: 'bob',
            address: '10.0.0.7',
            detail: { ...previous },
          }
        ),
      );
      expect(given).toEqual(['alice']);
      expect(started.replaced).toEqual({ username: 'alice', source: 'api' });
      expect(started.session.username).toBe('bob');
      const [event] = (await store.audit.list({ limit: 10 })).events;
      expect(event).toMatchObject({ kind: 'portal.sign-in', detail: { username: 'alice', source: 'api' } });
      const fresh = await store.sessions.startPortal(
        { key: ip('10.0.0.8'), username: 'carol', source: 'portal' },
        { clientIp: '10.0.0.8', settings },
        () => ({ kind: 'portal.sign-in', actor: 'user:carol', user: 'carol', address: '10.0.0.8' }),
      );
      expect(fresh.replaced).toBeUndefined();
    });

    it("an IPv6 registration is also given the session its address binding replaces on the client's address", async () => {
      const { store } = await one();
      const settings = { ...DEFAULT_PORTAL_SETTINGS, registrationClearDate: '2026-09-01' };
      const v6 = '2001:db8::5';
      await store.sessions.start({ key: ip(v6), username: 'bob', source: 'api' });
      const given: unknown[] = [];
      const started = await store.sessions.startPortal(
        registrationSession('02:00:00:00:00:01', 'alice', settings, T0),
        { clientIp: v6, settings },
        (previous, onAddress) => (
          given.push(previous, onAddress),
          { kind: 'portal.registration', actor: 'user:alice', user: 'alice', address: v6 }
        ),
      );
      expect(given).toEqual([undefined, { username: 'bob', source: 'api' }]);
      expect(started.replaced).toBeUndefined();
      expect(started.replacedOnAddress).toEqual({ username: 'bob', source: 'api' });
      expect(started.binding?.username).toBe('alice');
    });

    it("an agreement's event names the Device Group decided in its transaction", async () => {
      const { store } = await one();
      await store.deviceGroups.create({ name: 'Guests', cidrs: ['10.9.0.0/16'], active: true });
      await store.sessions.startAgreement(
        '10.9.9.9',
        { idleTimeoutMinutes: null, hardTimeoutMinutes: null },
        { kind: 'portal.agreement', actor: 'user:agreement', address: '10.9.9.9' },
      );
      const [event] = (await store.audit.list({ limit: 10 })).events;
      expect(event).toMatchObject({ kind: 'portal.agreement', detail: { group: 'Guests' } });
    });

    it('logins of one turn and their events are written together: every one recorded, in order, shipped once', async () => {
      // 150: more than one multi-row INSERT holds (64), and a count no power of two makes.
      const shipped: AuditRecord[][] = [];
      const { store } = await one((records) => shipped.push([...records]));
      const n = 150;
      await Promise.all(
        Array.from({ length: n }, (_, i) =>
          store.sessions.start(
            { key: ip(`10.1.${i >> 8}.${i & 255}`), username: `user${i}`, source: 'api' },
            login(`user${i}`, `10.1.${i >> 8}.${i & 255}`),
          ),
        ),
      );
      const events = await all(store.audit, {}, 7);
      expect(events.map((e) => e.user)).toEqual(Array.from({ length: n }, (_, i) => `user${n - 1 - i}`));
      expect(shipped.flat().map((r) => r.user)).toEqual(Array.from({ length: n }, (_, i) => `user${i}`));
      expect(shipped.length).toBeLessThan(n);
    });

    it('record(): admin actions in their own transaction; end, clear and endBySource record theirs', async () => {
      const { store } = await one();
      await store.audit.record({ kind: 'api-key.created', actor: 'cli:root', detail: { name: 'wifi' } });
      await store.sessions.start({ key: mac('aa:bb:cc:dd:ee:01'), username: 'bob', source: 'registration' });
      await store.sessions.end(mac('aa:bb:cc:dd:ee:01'), {
        kind: 'session.ended',
        actor: 'admin:root',
        user: 'bob',
      });
      await store.sessions.endBySource(['portal'], { kind: 'sessions.cleared', actor: 'admin:root' });
      await store.sessions.clear({ kind: 'sessions.cleared', actor: 'cli:root', detail: { all: true } });
      const kinds = (await all(store.audit)).map((e) => `${e.kind} ${e.actor}`);
      expect(kinds).toEqual([
        'sessions.cleared cli:root',
        'sessions.cleared admin:root',
        'session.ended admin:root',
        'api-key.created cli:root',
      ]);
    });

    it('never keeps a password, key, token or ticket, and caps what it keeps', async () => {
      const { store } = await one();
      await store.audit.record({
        kind: 'settings.saved',
        actor: 'admin:root',
        detail: {
          password: 'hunter2-secret',
          api_key: 'dm.abc.hunter3',
          nested: { token: 'tok-hunter4', ticket: 'YIIhunter5', fine: 'x'.repeat(5000) },
        },
      });
      const [event] = (await store.audit.list({ limit: 1 })).events;
      const text = JSON.stringify(event);
      for (const secret of ['hunter2', 'hunter3', 'hunter4', 'hunter5']) expect(text).not.toContain(secret);
      expect(event?.detail).toMatchObject({ password: '[redacted]', nested: { token: '[redacted]' } });
      expect(text.length).toBeLessThan(5000);
    });

    it('pages newest first by (time, id): every event once, events added meanwhile never shift a page', async () => {
      const { store, clock } = await one();
      for (let i = 0; i < 9; i++) {
        // Three events a millisecond: the id orders them.
        if (i % 3 === 0) clock.advance(1);
        await store.audit.record(login(`u${i}`, '10.0.0.1'));
      }
      const first = await store.audit.list({ limit: 4 });
      expect(first.events.map((e) => e.user)).toEqual(['u8', 'u7', 'u6', 'u5']);
      await store.audit.record(login('late', '10.0.0.1'));
      const rest = await all(store.audit, { ...(first.next === undefined ? {} : { before: first.next }) }, 4);
      expect(rest.map((e) => e.user)).toEqual(['u4', 'u3', 'u2', 'u1', 'u0']);
      expect((await store.audit.list({ limit: 1 })).events[0]?.user).toBe('late');
    });

    it("filters by user (the event's or its actor's name), address, kind and time range", async () => {
      const { store, clock } = await one();
      await store.audit.record(login('alice', '10.0.0.1'));
      clock.advance(MINUTE);
      await store.audit.record(login('bob', '10.0.0.2'));
      await store.audit.record({ kind: 'admin.sign-in', actor: 'admin:alice', address: '10.0.0.9' });
      clock.advance(MINUTE);
      await store.audit.record({ kind: 'api.logout', actor: 'api-key:wifi', address: '10.0.0.1' });
      const users = async (query: Omit<AuditQuery, 'limit'>) =>
        (await all(store.audit, query)).map((e) => `${e.kind}:${e.user ?? e.actor}`);
      expect(await users({ user: 'alice' })).toEqual(['admin.sign-in:admin:alice', 'api.login:alice']);
      expect(await users({ user: 'wifi' })).toHaveLength(3);
      expect(await users({ address: '10.0.0.1' })).toEqual(['api.logout:api-key:wifi', 'api.login:alice']);
      expect(await users({ kind: 'api.login' })).toEqual(['api.login:bob', 'api.login:alice']);
      expect(await users({ from: T0 + MINUTE, to: T0 + 2 * MINUTE })).toEqual([
        'admin.sign-in:admin:alice',
        'api.login:bob',
      ]);
      expect(await users({ user: 'alice', kind: 'api.logout' })).toEqual([]);
    });

    it('a filtered page reads a bounded number of rows: it may end short, with a cursor to go on from', async () => {
      const { store, clock } = await one();
      await store.audit.record(login('rare', '10.0.0.9'));
      for (let i = 0; i < 9; i++) {
        clock.advance(1000);
        await store.audit.record(login(`u${i}`, '10.0.0.1'));
      }
      const first = await store.audit.list({ user: 'rare', limit: 5, scanRows: 4 });
      expect(first.events).toEqual([]);
      // Searched back through the 4 newest: to the 6th login's time, from where the next page goes on.
      expect(first.searchedTo).toBe(T0 + 6000);
      expect(first.next).toEqual({ at: T0 + 6000, id: expect.any(Number) });
      const found = [];
      let before = first.next;
      for (let pages = 0; before !== undefined && pages < 5; pages++) {
        const page = await store.audit.list({ user: 'rare', limit: 5, scanRows: 4, before });
        found.push(...page.events.map((e) => e.user));
        before = page.next;
      }
      expect(found).toEqual(['rare']);
      expect(before).toBeUndefined();
    });

    it('purge deletes what is older than the retention, and nothing newer', async () => {
      const { store, clock } = await one();
      for (let i = 0; i < 5; i++) {
        await store.audit.record(login(`u${i}`, '10.0.0.1'));
        clock.advance(MINUTE);
      }
      expect(await store.audit.purge(T0 + 2 * MINUTE)).toBe(2);
      expect((await all(store.audit)).map((e) => e.user)).toEqual(['u4', 'u3', 'u2']);
      expect(await store.audit.purge(T0 + 2 * MINUTE)).toBe(0);
    });

    it('the purge of ended sessions records each expiry once, with its reason and the time it ended, whichever box purges', async () => {
      const site = await openSite({ now: T0 });
      const [a, b] = [await site.box({ name: 'a' }), await site.box({ name: 'b' })];
      await a.store.sessions.start({
        key: ip('10.0.0.1'),
        username: 'hard',
        source: 'api',
        expiresAt: T0 + MINUTE,
      });
      await a.store.sessions.start({
        key: mac('aa:bb:cc:dd:ee:02'),
        username: 'reg',
        source: 'registration',
        expiresAt: T0 + 2 * MINUTE,
      });
      await a.store.sessions.start({
        key: ip('10.0.0.3'),
        username: 'idle',
        source: 'portal',
        idleTimeoutMs: MINUTE,
      });
      await a.store.sessions.start({ key: ip('10.0.0.4'), username: 'stays', source: 'api' });
      site.clock.advance(2 * MINUTE);
      // Idle for a minute past its limit: within the grace for the helpers' unwritten sightings, kept.
      await b.sync();
      expect(await b.store.sessions.purgeExpired()).toBe(2);
      expect(a.store.sessions.find(ip('10.0.0.3'))).toBeDefined();
      site.clock.advance(10 * MINUTE);
      await a.sync();
      expect(await Promise.all([a.store.sessions.purgeExpired(), b.store.sessions.purgeExpired()])).toEqual(
        expect.arrayContaining([1, 0]),
      );
      const events = await all(a.store.audit, { kind: 'session.expired' });
      // Newest first by the time each ended; the idle one was purged later, by a, so its id is the greater.
      expect(events.map((e) => [e.user, e.detail['reason'], e.at, e.box])).toEqual([
        ['reg', 'date', T0 + 2 * MINUTE, 'b'],
        ['idle', 'idle', T0 + MINUTE, expect.stringMatching(/^[ab]$/)],
        ['hard', 'hard', T0 + MINUTE, 'b'],
      ]);
      expect(events[0]?.address).toBeUndefined();
      expect(events[0]?.detail['mac']).toBe('aa:bb:cc:dd:ee:02');
      expect(events[2]).toMatchObject({ address: '10.0.0.1', actor: 'system', detail: { source: 'api' } });
      await b.sync();
      expect(b.store.sessions.find(ip('10.0.0.4'))?.username).toBe('stays');
    });
  });
}
