import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startPortal, type Portal } from './harness.ts';

let portal: Portal;
beforeEach(async () => {
  portal = await startPortal();
});
afterEach(async () => {
  await portal.close();
});

describe('POST api/logout/', () => {
  it("ends the client address's session and says so, and is idempotent", async () => {
    await portal.post('/api/login/', { api_key: portal.key, username: 'alice' }, '127.0.0.2');
    await portal.post('/api/login/', { api_key: portal.key, username: 'bob' }, '127.0.0.3');

    const first = await portal.post('/api/logout/', { api_key: portal.key }, '127.0.0.2');
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ ok: true, ip: '127.0.0.2', ended: true });
    expect(first.headers['cache-control']).toBe('no-store');

    const again = await portal.post('/api/logout', { api_key: portal.key }, '127.0.0.2');
    expect(again.status).toBe(200);
    expect(again.json).toEqual({ ok: true, ip: '127.0.0.2', ended: false });

    expect(portal.sessions.list().map((s) => s.username)).toEqual(['bob']);
  });

  it('needs a live key', async () => {
    await portal.post('/api/login/', { api_key: portal.key, username: 'alice' });
    const missing = await portal.post('/api/logout/', {});
    expect(missing.status).toBe(400);
    expect(missing.json).toMatchObject({ ok: false, error: 'invalid_request', field: 'api_key' });
    portal.apiKeys.revoke('tests');
    const revoked = await portal.post('/api/logout/', { api_key: portal.key });
    expect(revoked.status).toBe(401);
    expect(revoked.json).toMatchObject({ ok: false, error: 'invalid_api_key' });
    expect(portal.sessions.list().map((s) => s.username)).toEqual(['alice']);
  });

  it('ignores a username it has no use for', async () => {
    const reply = await portal.post('/api/logout/', { api_key: portal.key, username: '\n' });
    expect(reply.status).toBe(200);
    expect(reply.json).toEqual({ ok: true, ip: '127.0.0.1', ended: false });
  });
});
