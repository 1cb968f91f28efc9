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

describe('session lifetime: the timeout field and the configured defaults', () => {
  const T = (s: number) => new Date(Date.UTC(2026, 0, 1) + s * 1000).toISOString();

  it('without a timeout and with the defaults, the session has no limits and the answer says none', async () => {
    const reply = await portal.post('/api/login/', { api_key: portal.key, username: 'alice' }, '127.0.0.2');
    expect(reply.json).toEqual({ ok: true, username: 'alice', ip: '127.0.0.2' });
    expect(portal.sessions.find({ kind: 'ip', value: '127.0.0.2' })).toMatchObject({
      expiresAt: undefined,
      idleTimeoutMs: undefined,
    });
  });

  it('timeout sets the hard expiry, and the answer gives it', async () => {
    portal.clock.advance(5000);
    const reply = await portal.post(
      '/api/login/',
      { api_key: portal.key, username: 'alice', timeout: '3600' },
      '127.0.0.2',
    );
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ ok: true, username: 'alice', ip: '127.0.0.2', expires_at: T(5 + 3600) });
    expect(portal.sessions.find({ kind: 'ip', value: '127.0.0.2' })).toMatchObject({
      expiresAt: Date.parse(T(3605)),
      idleTimeoutMs: undefined,
    });
  });

  it('the configured lifetimes apply to every login; timeout overrides the maximum only', async () => {
    await portal.close();
    portal = await startPortal({ api: { sessionIdleSeconds: 900, sessionMaxSeconds: 28_800 } });
    const plain = await portal.post('/api/login/', { api_key: portal.key, username: 'alice' }, '127.0.0.2');
    expect(plain.json).toEqual({
      ok: true,
      username: 'alice',
      ip: '127.0.0.2',
      expires_at: T(28_800),
      idle_timeout: 900,
    });
    expect(portal.sessions.find({ kind: 'ip', value: '127.0.0.2' })).toMatchObject({
      expiresAt: Date.parse(T(28_800)),
      idleTimeoutMs: 900_000,
    });
    // Longer than the configured maximum is allowed too: the calling script is trusted with its sessions.
    const given = await portal.post(
      '/api/login/',
      { api_key: portal.key, username: 'bob', timeout: '86400' },
      '127.0.0.3',
    );
    expect(given.json).toEqual({
      ok: true,
      username: 'bob',
      ip: '127.0.0.3',
      expires_at: T(86_400),
      idle_timeout: 900,
    });
    expect(portal.sessions.find({ kind: 'ip', value: '127.0.0.3' })).toMatchObject({
      expiresAt: Date.parse(T(86_400)),
      idleTimeoutMs: 900_000,
    });
  });

  it('refuses a bad timeout with a 400 naming the field, the value and what is allowed, and starts nothing', async () => {
    for (const timeout of ['', 'soon', '0', '-5', '1.5', '31536001', '1e3', ' 60']) {
      const reply = await portal.post('/api/login/', { api_key: portal.key, username: 'alice', timeout });
      expect(reply.status, timeout).toBe(400);
      expect(reply.json).toEqual({
        ...invalid('timeout'),
        message: `timeout: ${JSON.stringify(timeout)} is not allowed: a whole number of seconds from 1 to 31536000 (one year)`,
      });
    }
    expect(portal.sessions.list()).toEqual([]);
  });

  it('refuses a repeated timeout', async () => {
    const reply = await portal.post(
      '/api/login/',
      `api_key=${encodeURIComponent(portal.key)}&username=alice&timeout=60&timeout=60`,
    );
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({
      ...invalid('timeout'),
      message: 'timeout: given more than once; send it once',
    });
    expect(portal.sessions.list()).toEqual([]);
  });

  it('checks the key before the timeout', async () => {
    const reply = await portal.post('/api/login/', { api_key: 'wrong', username: 'alice', timeout: 'x' });
    expect(reply.status).toBe(401);
  });

  it('logout does not take a timeout (it is ignored like any unknown field)', async () => {
    await portal.post('/api/login/', { api_key: portal.key, username: 'alice', timeout: '60' }, '127.0.0.2');
    const reply = await portal.post('/api/logout/', { api_key: portal.key, timeout: 'x' }, '127.0.0.2');
    expect(reply.json).toEqual({ ok: true, ip: '127.0.0.2', ended: true });
  });
});
