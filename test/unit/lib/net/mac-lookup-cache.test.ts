import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import type { MacLookup } from '../../../../lib/net/mac-lookup.ts';
import { MacLookupCache } from '../../../../lib/net/mac-lookup-cache.ts';

const found = (mac: string): MacLookup => ({
  ok: true,
  ip: '10.0.0.5',
  mac,
  locallyAdministered: false,
  source: 'neighbour-table',
});
const failed: MacLookup = { ok: false, reason: 'lookup-failed', message: 'timed out' };
const missing: MacLookup = { ok: false, reason: 'no-entry', message: 'quiet' };

function counter(answers: MacLookup[]) {
  let calls = 0;
  const load = () => Promise.resolve(answers[Math.min(calls++, answers.length - 1)] as MacLookup);
  return { load, calls: () => calls };
}

describe('MacLookupCache', () => {
  it('keeps an answer for ttlMs by the injected clock, then loads again', async () => {
    const clock = new ManualClock();
    const cache = new MacLookupCache({ clock, ttlMs: 1000 });
    const source = counter([found('3c:22:fb:00:00:01'), found('3c:22:fb:00:00:02')]);
    expect(await cache.get('10.0.0.5', source.load)).toEqual(found('3c:22:fb:00:00:01'));
    clock.advance(999);
    expect(await cache.get('10.0.0.5', source.load)).toEqual(found('3c:22:fb:00:00:01'));
    clock.advance(1);
    expect(await cache.get('10.0.0.5', source.load)).toEqual(found('3c:22:fb:00:00:02'));
    expect(source.calls()).toBe(2);
  });

  it('keys by address', async () => {
    const cache = new MacLookupCache({ clock: new ManualClock() });
    const source = counter([found('3c:22:fb:00:00:01')]);
    await cache.get('10.0.0.5', source.load);
    await cache.get('10.0.0.6', source.load);
    expect(source.calls()).toBe(2);
  });

  it('shares one load between concurrent callers, found or failed', async () => {
    const cache = new MacLookupCache({ clock: new ManualClock() });
    let release: (answer: MacLookup) => void = () => {};
    let calls = 0;
    const load = () => {
      calls++;
      return new Promise<MacLookup>((resolve) => (release = resolve));
    };
    const both = Promise.all([cache.get('10.0.0.5', load), cache.get('10.0.0.5', load)]);
    release(failed);
    expect(await both).toEqual([failed, failed]);
    expect(calls).toBe(1);
  });

  it('keeps misses, not lookup failures', async () => {
    const cache = new MacLookupCache({ clock: new ManualClock() });
    const missed = counter([missing]);
    await cache.get('10.0.0.5', missed.load);
    await cache.get('10.0.0.5', missed.load);
    expect(missed.calls()).toBe(1);
    const broken = counter([failed, found('3c:22:fb:00:00:01')]);
    expect(await cache.get('10.0.0.6', broken.load)).toEqual(failed);
    expect(await cache.get('10.0.0.6', broken.load)).toEqual(found('3c:22:fb:00:00:01'));
    expect(cache.size).toBe(2);
  });

  it('passes a rejected load on, remembers nothing, and loads again next time', async () => {
    const cache = new MacLookupCache({ clock: new ManualClock() });
    await expect(cache.get('10.0.0.5', () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await cache.get('10.0.0.5', () => Promise.resolve(missing))).toEqual(missing);
  });

  it('holds at most maxEntries addresses, dropping the oldest', async () => {
    const cache = new MacLookupCache({ clock: new ManualClock(), maxEntries: 2 });
    const source = counter([missing]);
    for (const ip of ['10.0.0.1', '10.0.0.2', '10.0.0.3']) await cache.get(ip, source.load);
    expect(cache.size).toBe(2);
    await cache.get('10.0.0.3', source.load);
    await cache.get('10.0.0.2', source.load);
    expect(source.calls()).toBe(3);
    await cache.get('10.0.0.1', source.load);
    expect(source.calls()).toBe(4);
  });

  it('keeps nothing with ttlMs 0', async () => {
    const cache = new MacLookupCache({ clock: new ManualClock(), ttlMs: 0 });
    const source = counter([missing]);
    await cache.get('10.0.0.5', source.load);
    await cache.get('10.0.0.5', source.load);
    expect(source.calls()).toBe(2);
    expect(cache.size).toBe(0);
  });
});
