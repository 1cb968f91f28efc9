import { afterEach, describe, expect, it } from 'vitest';
import { FORM, startPortal, type Portal } from './harness.ts';

let portal: Portal | undefined;
afterEach(async () => {
  await portal?.close();
  portal = undefined;
});

describe('routing', () => {
  it('answers 405 with Allow: POST for every other method, before looking at anything else', async () => {
    const p = (portal = await startPortal());
    for (const path of ['/api/login/', '/api/login', '/api/logout/', '/api/logout']) {
      for (const method of ['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']) {
        const reply = await p.send({ method, path });
        expect(reply.status, `${method} ${path}`).toBe(405);
        expect(reply.headers.allow).toBe('POST');
        expect(reply.headers['cache-control']).toBe('no-store');
        if (method !== 'HEAD') {
          expect(reply.json).toEqual({
            ok: false,
            error: 'method_not_allowed',
            message: `${method} is not allowed here; use POST`,
          });
        }
      }
    }
  });

  it('answers 404 in JSON for any other path', async () => {
    const p = (portal = await startPortal());
    for (const path of ['/', '/api/', '/api/login//', '/api/login/x', '/API/login/', '/api/loginx']) {
      const reply = await p.post(path, { api_key: p.key, username: 'alice' });
      expect(reply.status, path).toBe(404);
      expect(reply.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(reply.headers['cache-control']).toBe('no-store');
      expect(reply.json).toMatchObject({ ok: false, error: 'not_found' });
    }
  });

  it('serves the API under the path of baseUrl and nowhere else', async () => {
    const p = (portal = await startPortal({ baseUrl: 'http://proxy.example/doorman/' }));
    expect((await p.post('/doorman/api/login/', { api_key: p.key, username: 'alice' })).status).toBe(200);
    expect((await p.post('/doorman/api/login', { api_key: p.key, username: 'alice' })).status).toBe(200);
    expect((await p.post('/doorman/api/logout/', { api_key: p.key })).json).toMatchObject({ ended: true });
    for (const path of ['/api/login/', '/doormanx/api/login/', '/doorman', '/x/doorman/api/login/']) {
      const reply = await p.post(path, { api_key: p.key, username: 'alice' });
      expect(reply.status, path).toBe(404);
      expect(reply.json).toMatchObject({ error: 'not_found' });
    }
    expect(p.logs[0]).toMatch(/^portal: POST "\/doorman\/api\/login\/" 200 /);
  });

  it('takes a base path with characters a route pattern would treat specially', async () => {
    const p = (portal = await startPortal({ baseUrl: 'http://proxy.example/a:b(c)*/' }));
    expect((await p.post('/a:b(c)*/api/login/', { api_key: p.key, username: 'alice' })).status).toBe(200);
    expect((await p.post('/a:x(c)*/api/login/', { api_key: p.key, username: 'alice' })).status).toBe(404);
  });
});

describe('errors and logging', () => {
  it('hides the details of a 500 from the client and logs them', async () => {
    const p = (portal = await startPortal());
    p.db.close();
    const reply = await p.post('/api/login/', { api_key: p.key, username: 'alice' });
    expect(reply.status).toBe(500);
    expect(reply.json).toEqual({ ok: false, error: 'server_error' });
    expect(reply.text).not.toContain('not open');
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(
      p.logs.some((l) => l.startsWith('portal: internal error, POST /api/login/: ') && /not open/.test(l)),
    ).toBe(true);
    expect(p.logs.at(-1)).toMatch(/^portal: POST "\/api\/login\/" 500 ip=127\.0\.0\.1 \d+ms$/);
  });

  it('never logs the query string, where a key sent by mistake would be', async () => {
    const p = (portal = await startPortal());
    await p.send({ method: 'GET', path: `/api/login/?api_key=${p.key}` });
    await p.send({
      method: 'POST',
      path: `/api/login/?api_key=${p.key}`,
      headers: { 'Content-Type': FORM },
      body: `api_key=${p.key}&username=alice`,
    });
    expect(p.logs).toHaveLength(2);
    expect(p.logs.join('\n')).not.toContain(p.key);
  });
});
