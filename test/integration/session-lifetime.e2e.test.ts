import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { form, http, type Response } from '../harness/http.ts';
import { startLab, type Lab } from '../harness/lab.ts';

/**
 * Session lifetimes end to end: a real Squid 5 with the generated configuration (ttl 0, as in every lab), a
 * running `doorman serve` and its session helpers. Waiting here is for the clock to pass an expiry; what is
 * asserted is the answer after it, never how long anything took.
 */

/** Squid keeps an answer for ttl (0 here) whole seconds: an expiry shows after at most ttl + 1 s. */
const SQUID_SLACK_MS = 1000 + 250;

function lab(config: Parameters<typeof startLab>[0]) {
  const state: { lab?: Lab } = {};
  beforeAll(async () => {
    state.lab = await startLab(config);
  });
  afterAll(async () => {
    await state.lab?.stop();
  });
  const get = (): Lab => {
    if (state.lab === undefined) throw new Error('lab not started');
    return state.lab;
  };
  const browse = (from: string): Promise<Response> =>
    http(`${get().originUrl}page?from=${encodeURIComponent(from)}`, {
      from,
      proxy: { host: '127.0.0.1', port: get().squidPort },
    });
  const login = (fields: Record<string, string>, from: string): Promise<Response> => {
    const f = form({ api_key: get().apiKey, ...fields });
    return http(`${get().doormanUrl}api/login/`, { method: 'POST', from, body: f.body, headers: f.headers });
  };
  return { get, browse, login };
}

/** Sleep until the wall clock is past `ms` (ms since the epoch). */
async function until(ms: number): Promise<void> {
  const left = ms - Date.now();
  if (left > 0) await sleep(left);
}

describe('the timeout field through a real Squid (no configured limits)', () => {
  const { get, browse, login } = lab({});

  it('a login with timeout=2 is identified, then refused once it has expired', async () => {
    const res = await login({ username: 'alice', timeout: '2' }, '127.0.0.2');
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body) as { expires_at: string };
    expect(body).toEqual({ ok: true, username: 'alice', ip: '127.0.0.2', expires_at: expect.any(String) });
    const expiresAt = Date.parse(body.expires_at);

    const page = await browse('127.0.0.2');
    expect(page.status).toBe(200);
    expect(page.headers['x-doorman-user']).toBe('alice');
    const listed = (await get().cli('sessions', 'list')).stdout.split('\n');
    expect(listed[0]).toBe('KEY\tUSER\tSOURCE\tCREATED\tLAST SEEN\tIDLE LIMIT\tIDLE UNTIL\tEXPIRES');
    expect(
      listed
        .find((l) => l.startsWith('127.0.0.2\t'))
        ?.split('\t')
        .slice(1),
    ).toEqual(['alice', 'api', expect.any(String), expect.any(String), '-', '-', body.expires_at]);

    await until(expiresAt + SQUID_SLACK_MS);
    const after = await browse('127.0.0.2');
    expect(after.status).toBe(403);
    expect(after.headers['x-doorman-user']).toBe('-');
    // Gone from the list of live sessions too.
    expect((await get().cli('sessions', 'list')).stdout).not.toMatch(/^127\.0\.0\.2\t/m);
  });

  it('a login without timeout still has no limit', async () => {
    const res = await login({ username: 'bob' }, '127.0.0.3');
    expect(JSON.parse(res.body)).toEqual({ ok: true, username: 'bob', ip: '127.0.0.3' });
    expect((await browse('127.0.0.3')).headers['x-doorman-user']).toBe('bob');
  });

  it('a bad timeout is a 400 naming the field, and starts no session', async () => {
    const res = await login({ username: 'carol', timeout: '1.5' }, '127.0.0.4');
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ ok: false, error: 'invalid_request', field: 'timeout' });
    expect((await browse('127.0.0.4')).status).toBe(403);
  });
});

describe('the configured idle limit through a real Squid', () => {
  const IDLE_SECONDS = 3;
  const { get, browse, login } = lab({
    config: { api: { sessionIdleSeconds: IDLE_SECONDS }, lastSeenFlushSeconds: 1 },
  });

  it('traffic keeps the session; after the idle limit it is refused, and later traffic does not revive it', async () => {
    const res = await login({ username: 'dave' }, '127.0.0.5');
    expect(JSON.parse(res.body)).toEqual({
      ok: true,
      username: 'dave',
      ip: '127.0.0.5',
      idle_timeout: IDLE_SECONDS,
    });
    // Busy for longer than the idle limit: still dave throughout.
    const busyUntil = Date.now() + (IDLE_SECONDS + 1) * 1000;
    let lastSeen = Date.now();
    while (Date.now() < busyUntil) {
      const page = await browse('127.0.0.5');
      lastSeen = Date.now();
      expect(page.headers['x-doorman-user']).toBe('dave');
      await sleep(200);
    }
    const listed = (await get().cli('sessions', 'list')).stdout.split('\n');
    expect(listed.find((l) => l.startsWith('127.0.0.5\t'))?.split('\t')[5]).toBe(`${IDLE_SECONDS}s`);

    // Quiet for longer than the limit: refused, and the refused requests do not count as traffic.
    await until(lastSeen + IDLE_SECONDS * 1000 + SQUID_SLACK_MS);
    for (let i = 0; i < 8; i++) {
      const page = await browse('127.0.0.5');
      expect(page.status).toBe(403);
      expect(page.headers['x-doorman-user']).toBe('-');
      await sleep(250);
    }
    // A new login is a new session.
    await login({ username: 'erin' }, '127.0.0.5');
    expect((await browse('127.0.0.5')).headers['x-doorman-user']).toBe('erin');
  });
});
