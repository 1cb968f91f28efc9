import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lookupUser } from '../../lib/system/service-user.ts';
import { form, http, type Response } from '../harness/http.ts';
import { startLab, type Lab } from '../harness/lab.ts';

/**
 * authd under `doorman serve` with a real Squid whose helpers are shims: authd runs as the helper user, answers
 * through the shims, and when it dies the shims hold Squid's lookups (Squid never sees a helper die) until serve
 * has restarted it. The lab's config has ttl=0, so every request asks the helper.
 */
let lab: Lab;
beforeAll(async () => {
  lab = await startLab();
});
afterAll(async () => {
  await lab?.stop();
});

const browse = (from: string): Promise<Response> =>
  http(`${lab.originUrl}page`, { from, proxy: { host: '127.0.0.1', port: lab.squidPort } });

/** The authd of this lab (its --config is the lab's file): pid, or undefined while there is none. */
function authdPid(): number | undefined {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  const line = out
    .split('\n')
    .find((l) => l.includes('dist/helpers/authd/main.js') && l.includes(lab.configFile));
  return line === undefined ? undefined : Number(line.trim().split(' ')[0]);
}

async function until<T>(what: string, get: () => T | undefined | Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = await get();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what}: not within 10 s`);
}

describe('authd behind the shims', () => {
  it('runs as the helper user, and answers Squid through the shims', async () => {
    const pid = await until('authd', authdPid);
    const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    expect(uid).toBe(lookupUser('proxy').uid);
    expect((await browse('127.0.0.2')).status).toBe(403);
    const f = form({ api_key: lab.apiKey, username: 'alice' });
    const login = await http(`${lab.doormanUrl}api/login/`, {
      method: 'POST',
      from: '127.0.0.2',
      body: f.body,
      headers: f.headers,
    });
    expect(login.status).toBe(200);
    const page = await browse('127.0.0.2');
    expect(page.status).toBe(200);
    expect(page.headers['x-doorman-user']).toBe('alice');
  });

  it('when authd dies: the shims hold the lookups (no helper dies, no BH), serve restarts it, and alice passes', async () => {
    const first = await until('authd', authdPid);
    process.kill(first, 'SIGKILL');
    // While it is down (about a second: serve's first backoff), the shims hold Squid's lookup until it is back.
    const page = await browse('127.0.0.2');
    expect(page.status).toBe(200);
    expect(page.headers['x-doorman-user']).toBe('alice');
    const second = await until('a new authd', () => {
      const pid = authdPid();
      return pid !== undefined && pid !== first ? pid : undefined;
    });
    expect(second).not.toBe(first);
    const cache = lab.cacheLog().join('\n');
    expect(cache).toMatch(
      /doorman-shim: .*session\.sock: .*; reconnecting, holding requests for up to 10000 ms/,
    );
    expect(cache).not.toMatch(/exited|died|FATAL/i);
  });
});
