import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { form, http, type Response } from '../harness/http.ts';
import { startLab, type Lab } from '../harness/lab.ts';

/**
 * The login API end to end: a real Squid 5 running `doorman squid-conf --standalone`, a running
 * `doorman serve`, an origin; clients are distinct loopback addresses (127.0.0.2, 127.0.0.3, ::1).
 */
let lab: Lab;
beforeAll(async () => {
  lab = await startLab();
});
afterAll(async () => {
  await lab?.stop();
});

const browse = (from: string, proxyHost = '127.0.0.1'): Promise<Response> =>
  http(`${lab.originUrl}page?from=${encodeURIComponent(from)}`, {
    from,
    proxy: { host: proxyHost, port: lab.squidPort },
  });

/** POST straight to Doorman, over IPv6 when the client address is IPv6. */
function post(
  path: string,
  fields: Record<string, string>,
  from: string,
  extra: Record<string, string> = {},
): Promise<Response> {
  const f = form(fields);
  const base = from.includes(':') ? `http://[::1]:${lab.doormanPort}/` : lab.doormanUrl;
  return http(`${base}${path}`, { method: 'POST', from, body: f.body, headers: { ...f.headers, ...extra } });
}

const login = (username: string, from: string, extra?: Record<string, string>) =>
  post('api/login/', { api_key: lab.apiKey, username }, from, extra);
const logout = (from: string) => post('api/logout/', { api_key: lab.apiKey }, from);

/**
 * The user in the access.log line of the newest page request from `from`. Fields of the doorman format:
 * time, elapsed, client, code/status, bytes, method, URL, user, hierarchy, type.
 */
async function loggedUser(from: string, count: number): Promise<string | undefined> {
  for (let i = 0; i < 40; i++) {
    const lines = lab
      .accessLog()
      .map((l) => l.split(/\s+/))
      .filter((f) => f[2] === from && f[6]?.includes('/page'));
    if (lines.length >= count) return lines.at(-1)?.[7];
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`fewer than ${count} access.log lines for ${from}:\n${lab.accessLog().join('\n')}`);
}

describe('login API through a real Squid', () => {
  it('denies a client before it logs in', async () => {
    const res = await browse('127.0.0.2');
    expect(res.status).toBe(403);
  });

  it('lets the client through as alice after POST /api/login/, and access.log shows alice', async () => {
    const res = await login('alice', '127.0.0.2');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ ok: true, username: 'alice', ip: '127.0.0.2' });
    const page = await browse('127.0.0.2');
    expect(page.status).toBe(200);
    expect(page.body).toBe('origin\n');
    expect(page.headers['x-doorman-user']).toBe('alice');
    expect(await loggedUser('127.0.0.2', 2)).toBe('alice');
  });

  it('keeps another address denied', async () => {
    expect((await browse('127.0.0.3')).status).toBe(403);
  });

  it('replaces alice with bob when bob logs in from the same address', async () => {
    expect((await login('bob', '127.0.0.2')).status).toBe(200);
    const page = await browse('127.0.0.2');
    expect(page.status).toBe(200);
    expect(page.headers['x-doorman-user']).toBe('bob');
    expect(await loggedUser('127.0.0.2', 3)).toBe('bob');
    const { stdout } = await lab.cli('sessions', 'list');
    expect(stdout.split('\n').filter((l) => l.startsWith('127.0.0.2\t'))).toHaveLength(1);
  });

  it('denies the address again after logout, and a second logout ends nothing', async () => {
    const res = await logout('127.0.0.2');
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ ok: true, ip: '127.0.0.2', ended: true });
    expect((await browse('127.0.0.2')).status).toBe(403);
    expect(JSON.parse((await logout('127.0.0.2')).body)).toMatchObject({ ended: false });
  });

  it('a login sent through Squid as explicit proxy is for the client, not for Squid', async () => {
    const f = form({ api_key: lab.apiKey, username: 'carol' });
    const res = await http(`${lab.doormanUrl}api/login/`, {
      method: 'POST',
      from: '127.0.0.4',
      proxy: { host: '127.0.0.1', port: lab.squidPort },
      // a client-sent X-Forwarded-For in front of Squid's own entry must not win
      headers: { ...f.headers, 'x-forwarded-for': '127.0.0.9' },
      body: f.body,
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ ok: true, username: 'carol', ip: '127.0.0.4' });
    expect((await browse('127.0.0.4')).headers['x-doorman-user']).toBe('carol');
    expect((await browse('127.0.0.9')).status).toBe(403);
    const { stdout } = await lab.cli('sessions', 'list');
    expect(stdout).not.toMatch(/^127\.0\.0\.1\t/m);
    // an administrator ends it from the command line
    expect((await lab.cli('sessions', 'end', '127.0.0.4')).stdout).toMatch(
      /ended the session of carol on 127\.0\.0\.4/,
    );
    expect((await browse('127.0.0.4')).status).toBe(403);
  });

  it('ignores a forged X-Forwarded-For sent straight to Doorman from an untrusted address', async () => {
    const res = await login('mallory', '127.0.0.5', { 'x-forwarded-for': '127.0.0.3' });
    expect(JSON.parse(res.body)).toEqual({ ok: true, username: 'mallory', ip: '127.0.0.5' });
    expect((await browse('127.0.0.3')).status).toBe(403);
    expect((await browse('127.0.0.5')).headers['x-doorman-user']).toBe('mallory');
  });

  it('works the same over IPv6 (::1)', async () => {
    expect((await browse('::1', '::1')).status).toBe(403);
    const res = await login('dave', '::1', { 'x-forwarded-for': '127.0.0.3' });
    expect(JSON.parse(res.body)).toEqual({ ok: true, username: 'dave', ip: '::1' });
    const page = await browse('::1', '::1');
    expect(page.status).toBe(200);
    expect(page.headers['x-doorman-user']).toBe('dave');
    expect(await loggedUser('::1', 2)).toBe('dave');
    expect((await browse('127.0.0.3')).status).toBe(403);
    expect((await logout('::1')).status).toBe(200);
    expect((await browse('::1', '::1')).status).toBe(403);
  });

  it('refuses a revoked key at once', async () => {
    const { stdout } = await lab.cli('api-key', 'create', '--name', 'short-lived');
    const key = stdout.trim();
    const f = form({ api_key: key, username: 'erin' });
    const send = () =>
      http(`${lab.doormanUrl}api/login/`, {
        method: 'POST',
        from: '127.0.0.6',
        body: f.body,
        headers: f.headers,
      });
    expect((await send()).status).toBe(200);
    await lab.cli('api-key', 'revoke', '--name', 'short-lived');
    expect((await send()).status).toBe(401);
  });

  it('shows every user name in one unambiguous form: "a b" and "a%20b" stay two names', async () => {
    const names = [
      ['127.0.0.10', 'a b', 'a%20b'],
      ['127.0.0.11', 'a%20b', 'a%2520b'],
      ['127.0.0.12', 'été', '%C3%A9t%C3%A9'],
    ] as const;
    for (const [from, username, shown] of names) {
      expect((await login(username, from)).status).toBe(200);
      const page = await browse(from);
      expect(page.headers['x-doorman-user'], username).toBe(shown);
      expect(await loggedUser(from, 1), username).toBe(shown);
      expect(decodeURIComponent(shown)).toBe(username);
    }
  });
});
