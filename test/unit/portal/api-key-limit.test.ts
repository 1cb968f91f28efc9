import type { ParameterizedContext } from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/clock.ts';
import { ApiKeyStore } from '../../../lib/store/api-key-store.ts';
import { openDatabase } from '../../../lib/store/database.ts';
import { ApiError } from '../../../portal/errors.ts';
import { requireApiKey } from '../../../portal/middleware/api-key.ts';
import { KeyFailureLimiter } from '../../../portal/middleware/key-rate-limit.ts';
import type { PortalState } from '../../../portal/state.ts';
import { startPortal, type Portal } from './harness.ts';

let portal: Portal | undefined;
afterEach(async () => {
  await portal?.close();
  portal = undefined;
});

describe('API key rate limit, through the app', () => {
  it('answers wrong keys 429 once an address has used up its failures, and still lets a right key in', async () => {
    const p = (portal = await startPortal({ api: { maxKeyFailures: 3, keyFailureWindowSeconds: 60 } }));
    for (let i = 0; i < 3; i++) {
      expect(
        (await p.post('/api/login/', { api_key: 'wrong', username: 'mallory' }, '127.0.0.2')).status,
      ).toBe(401);
    }
    const limited = await p.post('/api/login/', { api_key: 'wrong', username: 'mallory' }, '127.0.0.2');
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('60');
    expect(limited.json).toEqual({
      ok: false,
      error: 'too_many_requests',
      message: 'too many wrong API keys from this address; retry in 60s',
    });

    // Another client behind the same (NAT) address, with the right key: served, not refused.
    const right = await p.post('/api/login/', { api_key: p.key, username: 'alice' }, '127.0.0.2');
    expect(right.status).toBe(200);
    expect(right.json).toMatchObject({ ok: true, username: 'alice', ip: '127.0.0.2' });
    expect((await p.post('/api/logout/', { api_key: p.key }, '127.0.0.2')).status).toBe(200);
    // Logout shares the counter: a wrong key there is refused 429 too.
    expect((await p.post('/api/logout/', { api_key: 'wrong' }, '127.0.0.2')).status).toBe(429);
    // Other addresses are not affected.
    expect((await p.post('/api/login/', { api_key: 'wrong', username: 'x' }, '127.0.0.3')).status).toBe(401);

    p.clock.advance(59_000);
    const later = await p.post('/api/login/', { api_key: 'wrong', username: 'mallory' }, '127.0.0.2');
    expect(later.headers['retry-after']).toBe('1');
    p.clock.advance(1_000);
    expect((await p.post('/api/login/', { api_key: 'wrong', username: 'mallory' }, '127.0.0.2')).status).toBe(
      401,
    );
  });

  it('does not count a missing key or a bad username with a good key', async () => {
    const p = (portal = await startPortal({ api: { maxKeyFailures: 1, keyFailureWindowSeconds: 60 } }));
    expect((await p.post('/api/login/', { username: 'alice' })).status).toBe(400);
    expect((await p.post('/api/login/', { api_key: p.key, username: '\n' })).status).toBe(400);
    expect((await p.post('/api/login/', { api_key: 'wrong', username: 'alice' })).status).toBe(401);
    expect((await p.post('/api/login/', { api_key: 'wrong', username: 'alice' })).status).toBe(429);
    expect((await p.post('/api/login/', { api_key: p.key, username: 'alice' })).status).toBe(200);
  });
});

describe('requireApiKey counts IPv6 clients by /64', () => {
  const setup = () => {
    const db = openDatabase(':memory:');
    const clock = new ManualClock();
    const keys = new ApiKeyStore(db, clock);
    const { key } = keys.create('tests');
    const check = requireApiKey(keys, new KeyFailureLimiter(clock, { maxFailures: 2, windowSeconds: 60 }));
    const send = async (clientIp: string, apiKey: string): Promise<number> => {
      const ctx = { state: { clientIp, params: new Map([['api_key', apiKey]]) } };
      try {
        await check(ctx as unknown as ParameterizedContext<PortalState>, async () => {});
        return 200;
      } catch (error) {
        if (error instanceof ApiError) return error.status;
        throw error;
      }
    };
    return { key, send, close: () => db.close() };
  };

  it('a guesser taking a new address of its /64 for every guess is still counted as one client', async () => {
    const { key, send, close } = setup();
    try {
      expect(await send('2001:db8:1:2::a', 'wrong')).toBe(401);
      expect(await send('2001:db8:1:2::b', 'wrong')).toBe(401);
      expect(await send('2001:db8:1:2:ffff:ffff:ffff:ffff', 'wrong')).toBe(429);
      // The next /64 and an IPv4 client are other clients.
      expect(await send('2001:db8:1:3::a', 'wrong')).toBe(401);
      expect(await send('192.0.2.1', 'wrong')).toBe(401);
      // The right key from the limited /64 still passes.
      expect(await send('2001:db8:1:2::c', key)).toBe(200);
    } finally {
      close();
    }
  });
});
