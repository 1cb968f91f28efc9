import { describe, expect, it } from 'vitest';
import type { SessionKey } from '../../../../../lib/store/session.ts';
import type { SessionRepository } from '../../../../../lib/store/store.ts';
import { rejection } from '../../../../support/thrown.ts';
import type { Box, ContractStore, OpenSite } from './site.ts';
import { ip, mac } from '../../../../support/session-keys.ts';

/**
 * The sessions' contract (SessionRepository), whichever engine: one live identity per key, on a site of boxes
 * sharing one store. What SessionStore's own tests prove on SQLite, through the interface: a write resolves
 * once durable and the writing box reads it at once; another box has it once it has caught up (sync). The
 * splash page's writes and the change stamp are in sessions-portal.ts.
 */

export const T0 = Date.UTC(2026, 0, 1);
export const MINUTE = 60_000;

export type Needs = Pick<ContractStore, 'sessions' | 'deviceGroups'>;

/** What another box has on `key` once it has caught up. */
const seenBy = async (box: Box<Needs>, key: SessionKey) => {
  await box.sync();
  return box.store.sessions.find(key);
};

/** The usernames of the box's live sessions, by key, once it has caught up. */
export const usersOf = async (box: Box<Needs>) => {
  await box.sync();
  return Object.fromEntries(box.store.sessions.list().map((s) => [s.key.value, s.username]));
};

export const login = (sessions: SessionRepository, key: SessionKey, username: string, expiresAt?: number) =>
  sessions.start({ key, username, source: 'api', ...(expiresAt === undefined ? {} : { expiresAt }) });

/** One box on a fresh site, and two. */
export function sites(openSite: OpenSite<Needs>) {
  const one = async () => {
    const site = await openSite({ now: T0 });
    const box = await site.box();
    return { site, clock: site.clock, box, sessions: box.store.sessions };
  };
  const two = async () => {
    const { site, clock, box } = await one();
    return { clock, a: box, b: await site.box() };
  };
  return { one, two };
}

/** start, find, end, list, clear, endBySource, touch, hard expiry, purgeExpired. */
export function describeSessions(openSite: OpenSite<Needs>): void {
  const { one, two } = sites(openSite);

  describe('sessions: start, find, end, list', () => {
    it('start answers the new session, which find gives on this box at once and on another once caught up', async () => {
      const { a, b } = await two();
      const started = await a.store.sessions.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
      expect(started).toEqual({
        id: expect.any(Number),
        key: { kind: 'ip', value: '10.0.0.5' },
        username: 'alice',
        source: 'api',
        createdAt: T0,
        lastSeen: T0,
        expiresAt: undefined,
        idleTimeoutMs: undefined,
      });
      expect(a.store.sessions.find(ip('10.0.0.5'))).toStrictEqual(started);
      expect(await seenBy(b, ip('10.0.0.5'))).toStrictEqual(started);
    });

    it('keeps a hard expiry and an idle limit, each per session; a new login on the key brings its own', async () => {
      const { sessions } = await one();
      const both = await sessions.start({
        key: ip('10.0.0.5'),
        username: 'alice',
        source: 'api',
        expiresAt: T0 + 3_600_000,
        idleTimeoutMs: 900_000,
      });
      const idleOnly = await sessions.start({
        key: ip('10.0.0.6'),
        username: 'bob',
        source: 'portal',
        idleTimeoutMs: MINUTE,
      });
      expect(both).toMatchObject({ expiresAt: T0 + 3_600_000, idleTimeoutMs: 900_000 });
      expect(idleOnly).toMatchObject({ expiresAt: undefined, idleTimeoutMs: MINUTE });
      expect(sessions.find(ip('10.0.0.5'))).toStrictEqual(both);
      expect(sessions.find(ip('10.0.0.6'))).toStrictEqual(idleOnly);
      const carol = await sessions.start({ key: ip('10.0.0.5'), username: 'carol', source: 'api' });
      expect(carol).toMatchObject({ expiresAt: undefined, idleTimeoutMs: undefined });
      expect(sessions.find(ip('10.0.0.5'))).toStrictEqual(carol);
    });

    it('refuses an idle limit that is not a positive whole number of ms, and writes nothing', async () => {
      const { sessions } = await one();
      for (const idleTimeoutMs of [0, -1, 1.5]) {
        const refused = await rejection(
          sessions.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api', idleTimeoutMs }),
        );
        expect(refused, String(idleTimeoutMs)).toBeInstanceOf(Error);
      }
      expect(sessions.list()).toEqual([]);
    });

    it('a write refused in a turn fails alone: the others of that turn are written', async () => {
      const { sessions } = await one();
      const [before, refused, after] = await Promise.all([
        rejection(login(sessions, ip('10.0.0.1'), 'alice')),
        rejection(sessions.start({ key: ip('10.0.0.2'), username: 'bob', source: 'api', idleTimeoutMs: 0 })),
        rejection(login(sessions, ip('10.0.0.3'), 'carol')),
      ]);
      expect([before, after]).toEqual([undefined, undefined]);
      expect(refused).toBeInstanceOf(Error);
      expect(sessions.list().map((s) => s.username)).toEqual(['alice', 'carol']);
    });

    it('an address binding keeps its MAC and ends at start + lifetimeMs or its expiry, whichever is first; traffic does not move it', async () => {
      const { clock, sessions } = await one();
      const binding = { username: 'carol', source: 'registration', mac: '52:54:00:12:34:56' } as const;
      const early = await sessions.start({
        ...binding,
        key: ip('fd00::5'),
        expiresAt: T0 + 10_000,
        lifetimeMs: MINUTE,
      });
      const late = await sessions.start({
        ...binding,
        key: ip('fd00::6'),
        expiresAt: T0 + 90_000,
        lifetimeMs: MINUTE,
      });
      const none = await sessions.start({ ...binding, key: ip('fd00::7'), lifetimeMs: MINUTE });
      expect([early.expiresAt, late.expiresAt, none.expiresAt]).toEqual([
        T0 + 10_000,
        T0 + MINUTE,
        T0 + MINUTE,
      ]);
      expect(sessions.find(ip('fd00::6'))).toMatchObject({
        mac: '52:54:00:12:34:56',
        expiresAt: T0 + MINUTE,
      });
      clock.advance(MINUTE - 1);
      await sessions.touch(new Map([[late.id, clock.now()]]));
      clock.advance(1);
      expect(sessions.find(ip('fd00::6'))).toBeUndefined();
    });

    it('find and list still give a session that looks idle from the store alone (the helper judges idleness)', async () => {
      const { clock, sessions } = await one();
      const s = await sessions.start({
        key: ip('10.0.0.5'),
        username: 'alice',
        source: 'api',
        idleTimeoutMs: 1000,
      });
      clock.advance(10_000);
      expect(sessions.find(ip('10.0.0.5'))).toStrictEqual(s);
      expect(sessions.list()).toStrictEqual([s]);
    });

    it('find on a key with no session is undefined; IP and MAC keys are apart, even with the same text', async () => {
      const { sessions } = await one();
      const byIp = await login(sessions, ip('10.0.0.5'), 'alice');
      const byMac = await sessions.start({
        key: mac('aa:bb:cc:dd:ee:ff'),
        username: 'bob',
        source: 'registration',
      });
      const sameTextIp = await login(sessions, ip('same'), 'carol');
      const sameTextMac = await login(sessions, mac('same'), 'dave');
      expect(sessions.find(ip('10.0.0.6'))).toBeUndefined();
      expect(sessions.find(mac('10.0.0.5'))).toBeUndefined();
      expect(sessions.list()).toHaveLength(4);
      expect(await sessions.end(mac('aa:bb:cc:dd:ee:ff'))).toEqual(byMac);
      expect(sessions.find(ip('10.0.0.5'))).toEqual(byIp);
      expect(await sessions.end(ip('same'))).toEqual(sameTextIp);
      expect(sessions.find(mac('same'))).toEqual(sameTextMac);
    });

    it('list gives every live session ordered by key kind, then key', async () => {
      const { sessions } = await one();
      await sessions.start({ key: ip('10.0.0.9'), username: 'carol', source: 'agreement' });
      await sessions.start({ key: mac('aa:bb:cc:dd:ee:ff'), username: 'dave', source: 'registration' });
      await sessions.start({ key: ip('10.0.0.10'), username: 'alice', source: 'api' });
      await sessions.start({ key: ip('2001:db8::1'), username: 'erin', source: 'portal' });
      expect(sessions.list().map((s) => [s.key.kind, s.key.value, s.username, s.source])).toEqual([
        ['ip', '10.0.0.10', 'alice', 'api'],
        ['ip', '10.0.0.9', 'carol', 'agreement'],
        ['ip', '2001:db8::1', 'erin', 'portal'],
        ['mac', 'aa:bb:cc:dd:ee:ff', 'dave', 'registration'],
      ]);
    });

    it('end answers the ended session once, then there is none, on every box', async () => {
      const { a, b } = await two();
      const started = await login(a.store.sessions, ip('10.0.0.5'), 'alice');
      await b.sync();
      expect(await b.store.sessions.end(ip('10.0.0.5'))).toEqual(started);
      expect(b.store.sessions.find(ip('10.0.0.5'))).toBeUndefined();
      expect(await b.store.sessions.end(ip('10.0.0.5'))).toBeUndefined();
      expect(await seenBy(a, ip('10.0.0.5'))).toBeUndefined();
      expect(await a.store.sessions.end(ip('10.0.0.5'))).toBeUndefined();
    });

    it('what a reader gets is its own: changing it changes nothing held', async () => {
      const { sessions } = await one();
      const started = await login(sessions, ip('10.0.0.5'), 'alice', T0 + 1000);
      const copy = structuredClone(started);
      for (const got of [started, sessions.find(ip('10.0.0.5')), sessions.list()[0]]) {
        if (got === undefined) throw new Error('no session on 10.0.0.5');
        got.username = 'mallory';
        got.expiresAt = undefined;
        got.key.value = '10.0.0.6';
      }
      expect(sessions.find(ip('10.0.0.5'))).toEqual(copy);
      expect(sessions.find(ip('10.0.0.6'))).toBeUndefined();
      expect(sessions.list()).toEqual([copy]);
    });

    it('an expired session still ends (and is answered); a new login on its key takes it', async () => {
      const { clock, sessions } = await one();
      const old = await login(sessions, ip('10.0.0.5'), 'alice', T0 + 10);
      clock.advance(10);
      expect(await sessions.end(ip('10.0.0.5'))).toEqual(old);
      await login(sessions, ip('10.0.0.5'), 'alice', T0 + 10);
      const fresh = await login(sessions, ip('10.0.0.5'), 'bob');
      expect(sessions.find(ip('10.0.0.5'))).toEqual(fresh);
    });
  });

  describe('sessions: one live identity per key', () => {
    it('a new login on a key replaces the session with a new id, whichever box makes it', async () => {
      const { clock, a, b } = await two();
      const alice = await login(a.store.sessions, ip('10.0.0.5'), 'alice');
      clock.advance(1000);
      const bob = await b.store.sessions.start({ key: ip('10.0.0.5'), username: 'bob', source: 'portal' });
      expect(bob.id).toBeGreaterThan(alice.id);
      expect(bob).toMatchObject({
        username: 'bob',
        source: 'portal',
        createdAt: T0 + 1000,
        lastSeen: T0 + 1000,
      });
      expect(b.store.sessions.list()).toEqual([bob]);
      expect(await seenBy(a, ip('10.0.0.5'))).toEqual(bob);
      expect(a.store.sessions.list()).toEqual([bob]);
      // The same user logging in again gets a new id too.
      const again = await login(a.store.sessions, ip('10.0.0.5'), 'bob');
      expect(again.id).toBeGreaterThan(bob.id);
      expect(a.store.sessions.list()).toEqual([again]);
    });

    it('an id is not used again, even after the newest session has ended', async () => {
      const { sessions } = await one();
      const first = await login(sessions, ip('10.0.0.5'), 'alice');
      await sessions.end(ip('10.0.0.5'));
      const second = await login(sessions, ip('10.0.0.5'), 'bob');
      expect(second.id).toBeGreaterThan(first.id);
    });

    it('the logins of one turn each get their own row; two on one key, the later one holds it', async () => {
      const { a, b } = await two();
      const users = Array.from({ length: 50 }, (_, i) => `user${i}`);
      const started = await Promise.all([
        ...users.map((username, i) => login(a.store.sessions, ip(`10.1.0.${i}`), username)),
        login(a.store.sessions, ip('10.2.0.1'), 'first'),
        login(a.store.sessions, ip('10.2.0.1'), 'second'),
      ]);
      expect(started.map((s) => s.username)).toEqual([...users, 'first', 'second']);
      expect(new Set(started.map((s) => s.id)).size).toBe(52);
      expect(a.store.sessions.list()).toHaveLength(51);
      expect(a.store.sessions.find(ip('10.2.0.1'))).toEqual(started[51]);
      await b.sync();
      expect(b.store.sessions.list()).toEqual(a.store.sessions.list());
    });

    it('two boxes logging in on one key at once: one session holds it, the same on both', async () => {
      const { a, b } = await two();
      const started = await Promise.all([
        login(a.store.sessions, ip('10.0.0.5'), 'alice'),
        login(b.store.sessions, ip('10.0.0.5'), 'bob'),
      ]);
      await a.sync();
      await b.sync();
      const held = a.store.sessions.find(ip('10.0.0.5'));
      expect(started).toContainEqual(held);
      expect(b.store.sessions.find(ip('10.0.0.5'))).toEqual(held);
      expect(b.store.sessions.list()).toHaveLength(1);
    });
  });

  describe('sessions: ending many', () => {
    it('clear ends every session, expired ones too, and says how many; every box sees none', async () => {
      const { a, b } = await two();
      await login(a.store.sessions, ip('10.0.0.1'), 'a');
      await login(a.store.sessions, ip('10.0.0.2'), 'b', T0 - 1);
      await login(a.store.sessions, mac('aa:bb:cc:dd:ee:ff'), 'c');
      await b.sync();
      expect(await b.store.sessions.clear()).toBe(3);
      expect(b.store.sessions.list()).toEqual([]);
      expect(await usersOf(a)).toEqual({});
      expect(await a.store.sessions.clear()).toBe(0);
    });

    it('endBySource (Clear current sessions) ends the sessions of the given sources only, on every box', async () => {
      const { a, b } = await two();
      await login(a.store.sessions, ip('10.0.0.1'), 'api-user');
      await a.store.sessions.start({ key: ip('10.0.0.2'), username: 'alice', source: 'portal' });
      await a.store.sessions.start({
        key: mac('aa:bb:cc:dd:ee:01'),
        username: 'bob',
        source: 'registration',
      });
      await a.store.sessions.start({ key: ip('10.0.0.3'), username: 'agreement:Lab', source: 'agreement' });
      await b.sync();
      expect(await b.store.sessions.endBySource(['portal', 'registration', 'agreement'])).toBe(3);
      expect(b.store.sessions.list().map((s) => [s.username, s.source])).toEqual([['api-user', 'api']]);
      expect(await usersOf(a)).toEqual({ '10.0.0.1': 'api-user' });
      expect(await a.store.sessions.endBySource(['portal'])).toBe(0);
      expect(await a.store.sessions.endBySource([])).toBe(0);
      expect(a.store.sessions.list()).toHaveLength(1);
    });
  });

  describe('sessions: "last seen"', () => {
    it('touch writes a batch of times at once; the latest sighting of any box wins, never an older one', async () => {
      const { a, b } = await two();
      const one = await login(a.store.sessions, ip('10.0.0.1'), 'a');
      const other = await login(a.store.sessions, ip('10.0.0.2'), 'b');
      const untouched = await login(a.store.sessions, ip('10.0.0.3'), 'c');
      await a.store.sessions.touch(
        new Map([
          [one.id, T0 + 5000],
          [other.id, T0 + 700],
        ]),
      );
      expect(a.store.sessions.find(ip('10.0.0.1'))?.lastSeen).toBe(T0 + 5000);
      expect(a.store.sessions.find(ip('10.0.0.2'))?.lastSeen).toBe(T0 + 700);
      expect(a.store.sessions.find(ip('10.0.0.3'))).toEqual(untouched);
      // Box B saw the first device earlier than A did, and the second later: it writes its times whether
      // or not it has caught up with A's.
      await b.store.sessions.touch(
        new Map([
          [one.id, T0 + 1000],
          [other.id, T0 + 900],
        ]),
      );
      await b.store.sessions.touch(new Map([[one.id, T0 - 1]]));
      for (const box of [a, b]) {
        await box.sync();
        expect(box.store.sessions.find(ip('10.0.0.1'))?.lastSeen).toBe(T0 + 5000);
        expect(box.store.sessions.find(ip('10.0.0.2'))?.lastSeen).toBe(T0 + 900);
      }
    });

    it('touch passes over the id of a replaced session (a late time never lands on the new user), unknown ids and an empty batch', async () => {
      const { clock, sessions } = await one();
      const alice = await login(sessions, ip('10.0.0.5'), 'alice');
      clock.advance(100);
      const bob = await login(sessions, ip('10.0.0.5'), 'bob');
      await sessions.touch(new Map([[alice.id, T0 + 99_999]]));
      await sessions.touch(new Map([[bob.id + 1000, T0 + 99_999]]));
      await sessions.touch(new Map());
      expect(sessions.find(ip('10.0.0.5'))).toEqual(bob);
      expect(sessions.list()).toEqual([bob]);
    });
  });

  describe('sessions: hard expiry', () => {
    it('a session is live until expiresAt and gone from find and list at it, on every box', async () => {
      const { clock, a, b } = await two();
      await login(a.store.sessions, ip('10.0.0.5'), 'alice', T0 + 1000);
      const forever = await login(a.store.sessions, ip('10.0.0.6'), 'bob');
      await b.sync();
      clock.advance(999);
      for (const { store } of [a, b]) {
        expect(store.sessions.find(ip('10.0.0.5'))?.username).toBe('alice');
        expect(store.sessions.list().map((s) => s.username)).toEqual(['alice', 'bob']);
      }
      clock.advance(1);
      for (const { store } of [a, b]) {
        expect(store.sessions.find(ip('10.0.0.5'))).toBeUndefined();
        expect(store.sessions.list()).toEqual([forever]);
      }
      clock.advance(365 * 86_400_000);
      expect(b.store.sessions.find(ip('10.0.0.6'))).toEqual(forever);
    });

    it('purgeExpired deletes the expired sessions only and says how many; then no box can end them', async () => {
      const { clock, a, b } = await two();
      const purge = a.store.sessions;
      await login(purge, ip('10.0.0.1'), 'a', T0 + 1000);
      await login(purge, ip('10.0.0.2'), 'b', T0 + 2000);
      await login(purge, ip('10.0.0.3'), 'c');
      expect(await purge.purgeExpired()).toBe(0);
      clock.advance(1000);
      expect(await purge.purgeExpired()).toBe(1);
      expect(await purge.purgeExpired()).toBe(0);
      await b.sync();
      // Expired but not purged, a session still ends; purged, there is nothing left to end.
      expect(await b.store.sessions.end(ip('10.0.0.1'))).toBeUndefined();
      clock.advance(1000);
      expect((await b.store.sessions.end(ip('10.0.0.2')))?.username).toBe('b');
      expect(await b.store.sessions.purgeExpired()).toBe(0);
      expect(await usersOf(a)).toEqual({ '10.0.0.3': 'c' });
    });
  });
}
