import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { GroupCache } from '../../../../lib/directory/group-cache.ts';

let clock: ManualClock;
beforeEach(() => {
  clock = new ManualClock();
});

/** A loader that counts its calls and resolves when told to. */
function loader<V>(value: V) {
  const calls = { count: 0 };
  const release: Array<() => void> = [];
  const load = () => {
    calls.count++;
    return new Promise<V>((resolve) => release.push(() => resolve(value)));
  };
  return { calls, load, release: () => release.splice(0).forEach((r) => r()) };
}

describe('GroupCache', () => {
  it('loads once and answers from memory until the TTL is over', async () => {
    const cache = new GroupCache<string[]>({ ttlSeconds: 60, clock });
    let loads = 0;
    const load = async () => {
      loads++;
      return ['staff'];
    };
    expect(await cache.get('alice', load)).toEqual(['staff']);
    clock.advance(59_999);
    expect(await cache.get('alice', load)).toEqual(['staff']);
    expect(loads).toBe(1);
    clock.advance(1);
    await cache.get('alice', load);
    expect(loads).toBe(2);
  });

  it('shares one load among concurrent requests for the same key', async () => {
    const cache = new GroupCache<string[]>({ ttlSeconds: 60, clock });
    const l = loader(['staff']);
    const answers = Promise.all([
      cache.get('alice', l.load),
      cache.get('alice', l.load),
      cache.get('alice', l.load),
    ]);
    l.release();
    expect(await answers).toEqual([['staff'], ['staff'], ['staff']]);
    expect(l.calls.count).toBe(1);
  });

  it('keeps keys apart', async () => {
    const cache = new GroupCache<string>({ ttlSeconds: 60, clock });
    expect(await cache.get('a', async () => 'A')).toBe('A');
    expect(await cache.get('b', async () => 'B')).toBe('B');
    expect(await cache.get('a', async () => 'other')).toBe('A');
  });

  it('does not remember a failure', async () => {
    const cache = new GroupCache<string>({ ttlSeconds: 60, clock });
    await expect(cache.get('a', async () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    expect(await cache.get('a', async () => 'A')).toBe('A');
  });

  it('remembers undefined (an unknown user) like any answer', async () => {
    const cache = new GroupCache<string | undefined>({ ttlSeconds: 60, clock });
    let loads = 0;
    const load = async () => {
      loads++;
      return undefined;
    };
    await cache.get('nobody', load);
    await cache.get('nobody', load);
    expect(loads).toBe(1);
  });

  it('with a TTL of 0 keeps nothing, but still shares a load in flight', async () => {
    const cache = new GroupCache<string>({ ttlSeconds: 0, clock });
    const l = loader('A');
    const both = Promise.all([cache.get('a', l.load), cache.get('a', l.load)]);
    l.release();
    await both;
    expect(l.calls.count).toBe(1);
    const again = cache.get('a', l.load);
    l.release();
    await again;
    expect(l.calls.count).toBe(2);
    expect(cache.size).toBe(0);
  });

  it('keeps at most maxEntries', async () => {
    const cache = new GroupCache<string>({ ttlSeconds: 60, clock, maxEntries: 2 });
    for (const k of ['a', 'b', 'c']) await cache.get(k, async () => k);
    expect(cache.size).toBe(2);
    expect(await cache.get('a', async () => 'reloaded')).toBe('reloaded');
  });
});
