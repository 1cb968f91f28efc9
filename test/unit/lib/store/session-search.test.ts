import { describe, expect, it } from 'vitest';
import {
  compareKeys,
  firstMatches,
  sessionMatches,
  type SessionSearch,
} from '../../../../lib/store/session-search.ts';
import type { Session } from '../../../../lib/store/session.ts';

/** A fixed pseudo-random sequence (a test that fails fails the same way again). */
function random(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1_103_515_245 + 12_345) % 2 ** 31;
    return x / 2 ** 31;
  };
}

function sessions(count: number, next: () => number): Session[] {
  return Array.from({ length: count }, (_, id) => {
    const mac = next() < 0.3;
    const n = Math.floor(next() * 1000);
    return {
      id,
      key: mac
        ? {
            kind: 'mac',
            value: `aa:bb:cc:00:${String(n % 100).padStart(2, '0')}:${String(id % 100).padStart(2, '0')}`,
          }
        : { kind: 'ip', value: `10.${n % 7}.${Math.floor(n / 7) % 256}.${id % 256}` },
      username: ['alice', 'Alice', 'bob', 'carol', 'ALbert'][n % 5] as string,
      source: 'api',
      createdAt: 0,
      lastSeen: 0,
      expiresAt: undefined,
      idleTimeoutMs: undefined,
    } satisfies Session;
  });
}

describe('firstMatches', () => {
  it.each<Omit<SessionSearch, 'limit' | 'after'>>([
    { by: 'user', text: 'al', prefix: true },
    { by: 'user', text: 'ALICE', prefix: false },
    { by: 'ip', text: '10.3.', prefix: true },
    { by: 'mac', text: 'aa:bb:cc:00:4', prefix: true },
  ])('pages through %j exactly as a filter of the sorted whole would', (search) => {
    const all = sessions(3000, random(7));
    const expected = all.filter((s) => sessionMatches(s, search)).sort((a, b) => compareKeys(a.key, b.key));
    const seen: Session[] = [];
    let after: SessionSearch['after'];
    for (;;) {
      const page = firstMatches(all, { ...search, limit: 37, ...(after === undefined ? {} : { after }) });
      seen.push(...page.sessions);
      expect(page.sessions.length).toBeLessThanOrEqual(37);
      if (!page.more) break;
      after = page.sessions.at(-1)?.key;
    }
    expect(seen.map((s) => s.id)).toEqual(expected.map((s) => s.id));
    expect(expected.length).toBeGreaterThan(37);
  });
});
