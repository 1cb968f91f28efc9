import { afterEach, describe, expect, it } from 'vitest';
import { FORM, sendTo, startPortal, type Portal, type SendOptions } from './harness.ts';

let portal: Portal | undefined;
afterEach(async () => {
  await portal?.close();
  portal = undefined;
});

interface Login {
  key: string;
  username: string;
  /** The X-Forwarded-For header(s) to send, if any. */
  forwardedFor?: string | string[];
  /** The client's (loopback) address. */
  from?: string;
}

/** A POST /api/login/ request for `username` with `key`. */
const login = ({ key, username, forwardedFor, from }: Login): SendOptions => ({
  method: 'POST',
  path: '/api/login/',
  headers: {
    'Content-Type': FORM,
    ...(forwardedFor === undefined ? {} : { 'X-Forwarded-For': forwardedFor }),
  },
  body: new URLSearchParams({ api_key: key, username }).toString(),
  ...(from === undefined ? {} : { from }),
});

describe('client address', () => {
  it('believes X-Forwarded-For from a trusted proxy, taking the right-most untrusted hop', async () => {
    const p = (portal = await startPortal({ trustedProxies: ['127.0.0.1'] }));
    const reply = await p.send(
      login({ key: p.key, username: 'alice', forwardedFor: '198.51.100.66, 203.0.113.5', from: '127.0.0.1' }),
    );
    expect(reply.json).toEqual({ ok: true, username: 'alice', ip: '203.0.113.5' });
    expect(p.logs[0]).toContain(' ip=203.0.113.5 ');
  });

  it('joins repeated X-Forwarded-For headers in order', async () => {
    const p = (portal = await startPortal({ trustedProxies: ['127.0.0.1', '10.1.1.1'] }));
    const reply = await p.send(
      login({ key: p.key, username: 'alice', forwardedFor: ['203.0.113.5', '10.1.1.1'], from: '127.0.0.1' }),
    );
    expect(reply.json).toEqual({ ok: true, username: 'alice', ip: '203.0.113.5' });
  });

  it('ignores X-Forwarded-For from a peer that is not trusted', async () => {
    const p = (portal = await startPortal({ trustedProxies: ['127.0.0.1'] }));
    const reply = await p.send(
      login({ key: p.key, username: 'mallory', forwardedFor: '203.0.113.5', from: '127.0.0.2' }),
    );
    expect(reply.json).toEqual({ ok: true, username: 'mallory', ip: '127.0.0.2' });
    expect(p.sessions.find({ kind: 'ip', value: '203.0.113.5' })).toBeUndefined();
  });

  it('refuses a trusted proxy whose header does not name an address', async () => {
    const p = (portal = await startPortal({ trustedProxies: ['127.0.0.1'] }));
    const reply = await p.send(
      login({ key: p.key, username: 'alice', forwardedFor: 'unknown', from: '127.0.0.1' }),
    );
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({
      ok: false,
      error: 'invalid_request',
      message: 'X-Forwarded-For entry "unknown" is not an IP address',
    });
    expect(p.sessions.list()).toEqual([]);
  });

  it('counts wrong keys per forwarded client, not per proxy', async () => {
    const p = (portal = await startPortal({
      trustedProxies: ['127.0.0.1'],
      api: { maxKeyFailures: 1, keyFailureWindowSeconds: 60 },
    }));
    const via = (client: string, key: string) =>
      p.send(login({ key, username: 'alice', forwardedFor: client }));
    expect((await via('203.0.113.5', 'wrong')).status).toBe(401);
    expect((await via('203.0.113.5', p.key)).status).toBe(429);
    expect((await via('203.0.113.6', p.key)).status).toBe(200);
  });

  it('keys IPv6 clients by their RFC 5952 address', async () => {
    const p = (portal = await startPortal({}, [{ host: '::1', port: 0 }]));
    const reply = await p.post('/api/login/', { api_key: p.key, username: 'alice' });
    expect(reply.json).toEqual({ ok: true, username: 'alice', ip: '::1' });
    expect(p.sessions.find({ kind: 'ip', value: '::1' })?.username).toBe('alice');
  });

  it('keys an IPv4 client on a dual-stack socket by its IPv4 address, not ::ffff:a.b.c.d', async () => {
    const p = (portal = await startPortal({ trustedProxies: ['127.0.0.1'] }, [{ host: '::', port: 0 }]));
    const port = p.server.addresses[0]?.port ?? 0;
    const direct = await sendTo(
      { host: '127.0.0.1', port },
      login({ key: p.key, username: 'alice', from: '127.0.0.2' }),
    );
    expect(direct.json).toEqual({ ok: true, username: 'alice', ip: '127.0.0.2' });
    // A mapped peer matches its IPv4 entry in trustedProxies, too.
    const proxied = await sendTo(
      { host: '127.0.0.1', port },
      login({ key: p.key, username: 'bob', forwardedFor: '203.0.113.5', from: '127.0.0.1' }),
    );
    expect(proxied.json).toEqual({ ok: true, username: 'bob', ip: '203.0.113.5' });
  });
});
