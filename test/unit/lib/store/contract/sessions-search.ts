import { describe, expect, it } from 'vitest';
import type { SessionSearch } from '../../../../../lib/store/session-search.ts';
import type { SessionRepository } from '../../../../../lib/store/store.ts';
import type { OpenSite } from './site.ts';
import { ip, mac } from '../../../../support/session-keys.ts';
import { login, MINUTE, sites, T0, usersOf, type Needs } from './sessions.ts';

/** The keys of a page, and whether more follow. */
const keysOf = (sessions: SessionRepository, search: Partial<SessionSearch> & Pick<SessionSearch, 'by'>) => {
  const page = sessions.search({ text: '', prefix: false, limit: 50, ...search });
  return { keys: page.sessions.map((s) => s.key.value), more: page.more };
};

/** The Sessions screen's search and "end all of a user" (SessionRepository.search, endByUser). */
export function describeSessionSearch(openSite: OpenSite<Needs>): void {
  const { one, two } = sites(openSite);

  /** Alice on two addresses and a registered MAC, Bob on one address (bound to a MAC), a stranger expired. */
  const seeded = async () => {
    const setup = await two();
    const { a } = setup;
    await login(a.store.sessions, ip('10.0.0.12'), 'Alice');
    await login(a.store.sessions, ip('10.0.0.2'), 'alice');
    await a.store.sessions.start({
      key: mac('aa:bb:cc:00:00:01'),
      username: 'alice',
      source: 'registration',
    });
    await a.store.sessions.start({
      key: ip('10.0.1.1'),
      username: 'bob',
      source: 'registration',
      mac: 'aa:bb:cc:00:00:02',
    });
    await login(a.store.sessions, ip('10.0.0.3'), 'al%ice_');
    await login(a.store.sessions, ip('10.0.0.4'), 'gone', T0 + MINUTE);
    setup.clock.advance(2 * MINUTE);
    await setup.b.sync();
    return setup;
  };

  describe('sessions: search', () => {
    it('by user: exact or prefix, ASCII case-insensitive, LIKE wildcards taken literally, expired sessions left out', async () => {
      const { b } = await seeded();
      const s = b.store.sessions;
      expect(keysOf(s, { by: 'user', text: 'ALICE' })).toEqual({
        keys: ['10.0.0.12', '10.0.0.2', 'aa:bb:cc:00:00:01'],
        more: false,
      });
      expect(keysOf(s, { by: 'user', text: 'al', prefix: true }).keys).toEqual([
        '10.0.0.12',
        '10.0.0.2',
        '10.0.0.3',
        'aa:bb:cc:00:00:01',
      ]);
      expect(keysOf(s, { by: 'user', text: 'AL%', prefix: true }).keys).toEqual(['10.0.0.3']);
      expect(keysOf(s, { by: 'user', text: 'a_ice', prefix: true }).keys).toEqual([]);
      expect(keysOf(s, { by: 'user', text: 'al%ice_' }).keys).toEqual(['10.0.0.3']);
      expect(keysOf(s, { by: 'user', text: 'gone' }).keys).toEqual([]);
      expect(keysOf(s, { by: 'user', text: 'ali' }).keys).toEqual([]);
    });

    it("by address: the whole address or its start, in key order; by MAC: a registration's key or a binding's MAC", async () => {
      const { a } = await seeded();
      const s = a.store.sessions;
      expect(keysOf(s, { by: 'ip', text: '10.0.0.2' }).keys).toEqual(['10.0.0.2']);
      expect(keysOf(s, { by: 'ip', text: '10.0.0.1', prefix: true }).keys).toEqual(['10.0.0.12']);
      expect(keysOf(s, { by: 'ip', text: '10.0.', prefix: true }).keys).toEqual([
        '10.0.0.12',
        '10.0.0.2',
        '10.0.0.3',
        '10.0.1.1',
      ]);
      expect(keysOf(s, { by: 'ip', text: '10.0.0.4' }).keys).toEqual([]);
      expect(keysOf(s, { by: 'mac', text: 'aa:bb:cc:00:00:02' }).keys).toEqual(['10.0.1.1']);
      expect(keysOf(s, { by: 'mac', text: 'aa:bb:cc', prefix: true }).keys).toEqual([
        '10.0.1.1',
        'aa:bb:cc:00:00:01',
      ]);
    });

    it('pages: at most limit, "more" when there are, the next page after the last key, every session once', async () => {
      const { sessions } = await one();
      for (let i = 0; i < 25; i++) await login(sessions, ip(`10.2.0.${100 + i}`), `user${i % 3}`);
      const seen: string[] = [];
      let after: SessionSearch['after'];
      let pages = 0;
      for (;;) {
        const page = sessions.search({
          by: 'ip',
          text: '10.2.',
          prefix: true,
          limit: 10,
          ...(after ? { after } : {}),
        });
        pages += 1;
        seen.push(...page.sessions.map((x) => x.key.value));
        if (!page.more) break;
        after = page.sessions.at(-1)?.key;
      }
      expect(pages).toBe(3);
      expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => `10.2.0.${100 + i}`));
      expect(sessions.search({ by: 'user', text: 'user1', prefix: false, limit: 7 })).toMatchObject({
        more: true,
      });
      expect(sessions.search({ by: 'user', text: 'user1', prefix: false, limit: 8 }).sessions).toHaveLength(
        8,
      );
    });
  });

  describe('sessions: countBySource', () => {
    it('counts the live sessions of those sources on every box, expired ones not', async () => {
      const { a, b } = await seeded();
      expect(b.store.sessions.countBySource(['registration'])).toBe(2);
      expect(a.store.sessions.countBySource(['api', 'registration'])).toBe(5);
      expect(a.store.sessions.countBySource(['portal', 'agreement'])).toBe(0);
      expect(a.store.sessions.countBySource([])).toBe(0);
    });
  });

  describe('sessions: endByUser', () => {
    it("ends every session of that exact user name on every box, no one else's; how many", async () => {
      const { a, b } = await seeded();
      expect(await b.store.sessions.endByUser('alice')).toBe(2);
      expect(await usersOf(a)).toEqual({ '10.0.0.12': 'Alice', '10.0.0.3': 'al%ice_', '10.0.1.1': 'bob' });
      expect(await a.store.sessions.endByUser('nobody')).toBe(0);
      expect(await a.store.sessions.endByUser('Alice')).toBe(1);
      expect(await usersOf(b)).toEqual({ '10.0.0.3': 'al%ice_', '10.0.1.1': 'bob' });
    });
  });
}
