import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { form, http } from '../harness/http.ts';
import { startLab, type Lab } from '../harness/lab.ts';

/**
 * A stopped authd (SIGSTOP) behind a real Squid at ttl=0: the shims answer BH at their deadline (2 s here, the
 * test knob passed down through Squid's environment), so Squid denies rather than hangs, and once authd runs
 * again (SIGCONT, or serve's probe has replaced it) the next request is served.
 */
const DEADLINE_MS = '2000';
let lab: Lab;
let stopped: number | undefined; // continued in afterAll too, should the test fail while authd is stopped
const saved = process.env.DOORMAN_SHIM_DEADLINE_MS;
beforeAll(async () => {
  process.env.DOORMAN_SHIM_DEADLINE_MS = DEADLINE_MS;
  lab = await startLab();
});
/** SIGCONT, unless serve's probe has found it stuck and replaced it meanwhile (it may: see the supervisor). */
function continueIfAlive(pid: number): void {
  try {
    process.kill(pid, 'SIGCONT');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}
afterAll(async () => {
  if (stopped !== undefined) continueIfAlive(stopped);
  if (saved === undefined) delete process.env.DOORMAN_SHIM_DEADLINE_MS;
  else process.env.DOORMAN_SHIM_DEADLINE_MS = saved;
  await lab?.stop();
});

/** The pids of this lab's authd (its command line names the lab's config). */
const authdPids = (): number[] =>
  execFileSync('pgrep', ['-f', `authd/main.js.*${lab.configFile}`], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map(Number);

describe('a stopped authd behind Squid', () => {
  it('gets its requests answered BH at the shim deadline (403, no hang), and serves again once it runs', async () => {
    const proxy = { host: '127.0.0.1', port: lab.squidPort };
    const f = form({ api_key: lab.apiKey, username: 'alice' });
    const login = await http(`${lab.doormanUrl}api/login/`, { method: 'POST', from: '127.0.0.3', ...f });
    expect(login.status).toBe(200);
    expect((await http(`${lab.originUrl}page`, { from: '127.0.0.3', proxy })).status).toBe(200);
    const pids = authdPids();
    expect(pids).toHaveLength(1);
    const [pid] = pids as [number];
    process.kill((stopped = pid), 'SIGSTOP');
    expect((await http(`${lab.originUrl}page`, { from: '127.0.0.3', proxy })).status).toBe(403);
    continueIfAlive(pid);
    stopped = undefined;
    // Served by the continued authd, or by the one serve started in its place: the shims hold meanwhile.
    const page = await http(`${lab.originUrl}page`, { from: '127.0.0.3', proxy });
    expect(page.status).toBe(200);
    expect(page.headers['x-doorman-user']).toBe('alice');
    expect(lab.cacheLog().join('\n')).toMatch(/a request unanswered in time was answered BH; reconnecting/);
  });
});
