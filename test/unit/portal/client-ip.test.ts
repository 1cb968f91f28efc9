import { afterEach, describe, expect, it } from 'vitest';
import { FORM, PROXY_KEY, sendTo, startPortal, type Portal, type SendOptions } from './harness.ts';

let portal: Portal | undefined;
afterEach(async () => {
  await portal?.close();
  portal = undefined;
});

interface Request {
  key: string;
  username?: string;
  /** Headers a client (or Squid) adds. */
  headers?: Record<string, string | string[]>;
  /** The client's (loopback) address. */
  from?: string;
  path?: string;
}

/** A POST /api/login/ (or `path`) request. */
const post = ({ key, username, headers, from, path }: Request): SendOptions => ({
  method: 'POST',
  path: path ?? '/api/login/',
  headers: { 'Content-Type': FORM, ...headers },
  body: new URLSearchParams({ api_key: key, ...(username === undefined ? {} : { username }) }).toString(),
  ...(from === undefined ? {} : { from }),
});
const squidSays = (address: string) => ({ 'X-Doorman-Client': `${PROXY_KEY} ${address}` });
/** What a client can write, through a tunnel or straight: every forwarding header there is. */
const forged = {
  'X-Forwarded-For': '127.0.0.99',
  Forwarded: 'for=127.0.0.99',
  'X-Real-IP': '127.0.0.99',
  'X-Doorman-Client': 'guess 127.0.0.99',
};

describe('client address', () => {
  it('believes the address a trusted proxy wrote with the proxy key', async () => {
    const p = (portal = await startPortal({ trustedProxies: ['127.0.0.1'] }));
    const reply = await p.send(
      post({ key: p.key, username: 'alice', headers: squidSays('203.0.113.5'), from: '127.0.0.1' }),
    );
    expect(reply.json).toEqual({ ok: true, username: 'alice', ip: '203.0.113.5' });
    expect(p.logs[0]).toContain(' ip=203.0.113.5 ');
  });

  it('refuses a request from a trusted proxy without the key (a CONNECT tunnel): no session, no count', async () => {
    const p = (portal = await startPortal({
      trustedProxies: ['127.0.0.1'],
      api: { maxKeyFailures: 1, keyFailureWindowSeconds: 60 },
    }));
    for (const headers of [{}, forged, { 'X-Forwarded-For': '127.0.0.99' }]) {
      for (const path of ['/api/login/', '/api/logout/']) {
        const reply = await p.send(post({ key: 'wrong', username: 'ceo', headers, from: '127.0.0.1', path }));
        expect(reply.status).toBe(403);
        expect(reply.json).toMatchObject({ ok: false, error: 'unproven_client' });
      }
    }
    expect(p.sessions.list()).toEqual([]);
    // none of those wrong keys counted against anybody: the victim's own correct key still works
    expect((await p.send(post({ key: p.key, username: 'v', headers: squidSays('127.0.0.99') }))).status).toBe(
      200,
    );
  });

  it('ignores every forwarding header from a client that is not a trusted proxy', async () => {
    const p = (portal = await startPortal({ trustedProxies: ['127.0.0.1'] }));
    const reply = await p.send(post({ key: p.key, username: 'mallory', headers: forged, from: '127.0.0.2' }));
    expect(reply.json).toEqual({ ok: true, username: 'mallory', ip: '127.0.0.2' });
    // even the real key does not make a client a proxy
    const withKey = await p.send(
      post({ key: p.key, username: 'mallory', headers: squidSays('127.0.0.99'), from: '127.0.0.2' }),
    );
    expect(withKey.json).toEqual({ ok: true, username: 'mallory', ip: '127.0.0.2' });
    expect(p.sessions.find({ kind: 'ip', value: '127.0.0.99' })).toBeUndefined();
  });

  it('refuses a trusted proxy whose header does not name an address', async () => {
    const p = (portal = await startPortal({ trustedProxies: ['127.0.0.1'] }));
    const reply = await p.send(
      post({ key: p.key, username: 'alice', headers: squidSays('unknown'), from: '127.0.0.1' }),
    );
    expect(reply.status).toBe(400);
    expect(reply.json).toEqual({
      ok: false,
      error: 'invalid_request',
      message: 'X-Doorman-Client address "unknown" is not an IP address',
    });
    expect(p.sessions.list()).toEqual([]);
  });

  it('counts wrong keys per proven client, not per proxy', async () => {
    const p = (portal = await startPortal({
      trustedProxies: ['127.0.0.1'],
      api: { maxKeyFailures: 1, keyFailureWindowSeconds: 60 },
    }));
    const via = (client: string, key: string) =>
      p.send(post({ key, username: 'alice', headers: squidSays(client) }));
    expect((await via('203.0.113.5', 'wrong')).status).toBe(401);
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
      post({ key: p.key, username: 'alice', from: '127.0.0.2' }),
    );
    expect(direct.json).toEqual({ ok: true, username: 'alice', ip: '127.0.0.2' });
    // A mapped peer matches its IPv4 entry in trustedProxies, too.
    const proxied = await sendTo(
      { host: '127.0.0.1', port },
      post({ key: p.key, username: 'bob', headers: squidSays('203.0.113.5'), from: '127.0.0.1' }),
    );
    expect(proxied.json).toEqual({ ok: true, username: 'bob', ip: '203.0.113.5' });
  });
});
