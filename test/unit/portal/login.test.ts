import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startPortal, type Portal } from './harness.ts';

let portal: Portal;
beforeEach(async () => {
  portal = await startPortal();
});
afterEach(async () => {
  await portal.close();
});

const invalid = (field: string) => ({ ok: false, error: 'invalid_request', field });

describe('POST api/login/', () => {
  it('starts a session for the client address and answers who and where', async () => {
    const reply = await portal.post('/api/login/', { api_key: portal.key, username: 'alice' }, '127.0.0.2');
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ ok: true, username: 'alice', ip: '127.0.0.2' });
    expect(portal.sessions.find({ kind: 'ip', value: '127.0.0.2' })).toMatchObject({
      username: 'alice',
      source: 'api',
    });
  });

  it('answers JSON that no cache keeps', async () => {
    const reply = await portal.post('/api/login/', { api_key: portal.key, username: 'alice' });
    expect(reply.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.headers['x-content-type-options']).toBe('nosniff');
  });

  it('accepts the path without the trailing slash too', async () => {
    const reply = await portal.post('/api/login', { api_key: portal.key, username: 'alice' }, '127.0.0.2');
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ ok: true, username: 'alice', ip: '127.0.0.2' });
  });

  it("replaces another user's session on the same address", async () => {
    await portal.post('/api/login/', { api_key: portal.key, username: 'alice' }, '127.0.0.2');
    await portal.post('/api/login/', { api_key: portal.key, username: 'carol' }, '127.0.0.3');
    const reply = await portal.post('/api/login/', { api_key: portal.key, username: 'bob' }, '127.0.0.2');
    expect(reply.json).toEqual({ ok: true, username: 'bob', ip: '127.0.0.2' });
    expect(portal.sessions.list().map((s) => [s.key.value, s.username])).toEqual([
      ['127.0.0.2', 'bob'],
      ['127.0.0.3', 'carol'],
    ]);
  });

  it('trims the username and stores the trimmed name', async () => {
    const reply = await portal.post(
      '/api/login/',
      { api_key: portal.key, username: '  alice \t' },
      '127.0.0.2',
    );
    expect(reply.json).toEqual({ ok: true, username: 'alice', ip: '127.0.0.2' });
  });

  it('takes a username of 256 characters and refuses 257', async () => {
    const ok = await portal.post('/api/login/', { api_key: portal.key, username: 'é'.repeat(256) });
    expect(ok.status).toBe(200);
    const long = await portal.post('/api/login/', { api_key: portal.key, username: 'é'.repeat(257) });
    expect(long.status).toBe(400);
    expect(long.json).toMatchObject(invalid('username'));
  });

  it('refuses control characters, line separators and blank names, saying what is allowed', async () => {
    for (const username of ['a\nb', 'a\u0000b', 'a\u2028b', '   ']) {
      const reply = await portal.post('/api/login/', { api_key: portal.key, username });
      expect(reply.status).toBe(400);
      expect(reply.json).toEqual({
        ...invalid('username'),
        message: `username: ${JSON.stringify(username)} is not allowed: 1-256 characters after trimming white space, no control characters`,
      });
    }
    expect(portal.sessions.list()).toEqual([]);
  });

  it('names a missing or empty parameter, api_key first', async () => {
    const cases: [Record<string, string>, string][] = [
      [{}, 'api_key'],
      [{ username: 'alice' }, 'api_key'],
      [{ api_key: '', username: 'alice' }, 'api_key'],
      [{ api_key: portal.key }, 'username'],
      [{ api_key: portal.key, username: '' }, 'username'],
    ];
    for (const [form, field] of cases) {
      const reply = await portal.post('/api/login/', form);
      expect(reply.status).toBe(400);
      expect(reply.json).toEqual({
        ...invalid(field),
        message: `${field}: missing or empty; send it as a form field`,
      });
    }
  });

  it('refuses wrong, unknown, malformed and revoked keys with one answer, never echoing the key', async () => {
    const wrongSecret = `${portal.key.slice(0, -1)}${portal.key.endsWith('A') ? 'B' : 'A'}`;
    const unknownId = `dm.AAAAAAAAAAAA.${'A'.repeat(43)}`;
    for (const key of [wrongSecret, unknownId, 'not-a-key']) {
      const reply = await portal.post('/api/login/', { api_key: key, username: 'alice' });
      expect(reply.status).toBe(401);
      expect(reply.json).toEqual({
        ok: false,
        error: 'invalid_api_key',
        message: 'the API key is wrong or revoked',
      });
      expect(reply.text).not.toContain(key);
    }
    expect(portal.sessions.list()).toEqual([]);
  });

  it('refuses a revoked key from the next request on', async () => {
    expect((await portal.post('/api/login/', { api_key: portal.key, username: 'alice' })).status).toBe(200);
    portal.apiKeys.revoke('tests');
    const reply = await portal.post('/api/login/', { api_key: portal.key, username: 'bob' });
    expect(reply.status).toBe(401);
    expect(reply.json).toMatchObject({ ok: false, error: 'invalid_api_key' });
    expect(portal.sessions.find({ kind: 'ip', value: '127.0.0.1' })?.username).toBe('alice');
  });

  it('checks the key before the username, so an unauthenticated caller learns nothing else', async () => {
    const reply = await portal.post('/api/login/', { api_key: 'wrong', username: '\n' });
    expect(reply.status).toBe(401);
    expect(reply.json).toMatchObject({ error: 'invalid_api_key' });
  });

  it('logs one line per request with the username on success and never the key', async () => {
    await portal.post('/api/login/', { api_key: portal.key, username: 'alice' }, '127.0.0.2');
    await portal.post('/api/login/', { api_key: `${portal.key}x`, username: 'mallory' }, '127.0.0.2');
    expect(portal.logs).toHaveLength(2);
    expect(portal.logs[0]).toMatch(/^portal: POST "\/api\/login\/" 200 ip=127\.0\.0\.2 user="alice" \d+ms$/);
    expect(portal.logs[1]).toMatch(/^portal: POST "\/api\/login\/" 401 ip=127\.0\.0\.2 \d+ms$/);
    expect(portal.logs.join('\n')).not.toContain(portal.key.slice(3));
  });
});

describe('API key rate limit', () => {
  it('refuses an address with 429 and Retry-After after too many wrong keys, before checking the key', async () => {
    await portal.close();
    portal = await startPortal({ api: { maxKeyFailures: 3, keyFailureWindowSeconds: 60 } });
    for (let i = 0; i < 3; i++) {
      const reply = await portal.post('/api/login/', { api_key: 'wrong', username: 'alice' }, '127.0.0.2');
      expect(reply.status).toBe(401);
    }
    // Even the right key is not looked at now.
    const limited = await portal.post('/api/login/', { api_key: portal.key, username: 'alice' }, '127.0.0.2');
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('60');
    expect(limited.json).toEqual({
      ok: false,
      error: 'too_many_requests',
      message: 'too many wrong API keys from this address; retry in 60s',
    });
    expect(portal.sessions.list()).toEqual([]);

    // Other addresses are not affected; logout is limited too (same counter).
    expect(
      (await portal.post('/api/login/', { api_key: portal.key, username: 'bob' }, '127.0.0.3')).status,
    ).toBe(200);
    expect((await portal.post('/api/logout/', { api_key: portal.key }, '127.0.0.2')).status).toBe(429);

    portal.clock.advance(59_000);
    expect(
      (await portal.post('/api/login/', { api_key: portal.key, username: 'alice' }, '127.0.0.2')).headers[
        'retry-after'
      ],
    ).toBe('1');
    portal.clock.advance(1_000);
    const after = await portal.post('/api/login/', { api_key: portal.key, username: 'alice' }, '127.0.0.2');
    expect(after.status).toBe(200);
  });

  it('does not count a missing key or a bad username with a good key', async () => {
    await portal.close();
    portal = await startPortal({ api: { maxKeyFailures: 1, keyFailureWindowSeconds: 60 } });
    expect((await portal.post('/api/login/', { username: 'alice' })).status).toBe(400);
    expect((await portal.post('/api/login/', { api_key: portal.key, username: '\n' })).status).toBe(400);
    expect((await portal.post('/api/login/', { api_key: portal.key, username: 'alice' })).status).toBe(200);
    expect((await portal.post('/api/login/', { api_key: 'wrong', username: 'alice' })).status).toBe(401);
    expect((await portal.post('/api/login/', { api_key: portal.key, username: 'alice' })).status).toBe(429);
  });
});
