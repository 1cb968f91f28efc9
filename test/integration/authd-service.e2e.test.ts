import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pidFilePath, runningAuthd } from '../../helpers/authd/pid-file.ts';
import { form, http } from '../harness/http.ts';
import { ROOT, startLab, type Lab } from '../harness/lab.ts';
import { start, terminate, waitForPort, type Started } from '../harness/processes.ts';

/**
 * authd as a service of its own, through a real Squid at ttl=0 (every request asks the helper): the web app
 * killed (-9) and started again never denies an identified client, the new serve uses the authd that is
 * running, and a planned authd restart (doorman authd restart: the sockets handed to the successor, the shims
 * holding) loses no request under steady load.
 */
let lab: Lab;
let serve: Started | undefined;
beforeAll(async () => {
  lab = await startLab();
  const f = form({ api_key: lab.apiKey, username: 'alice' });
  const login = await http(`${lab.doormanUrl}api/login/`, {
    method: 'POST',
    from: '127.0.0.2',
    body: f.body,
    headers: f.headers,
  });
  expect(login.status).toBe(200);
});
afterAll(async () => {
  if (serve !== undefined) await terminate(serve);
  await lab?.stop();
});

const pidFile = () => pidFilePath(join(lab.dir, 'state', 'run'));
const browse = async (): Promise<number> =>
  (
    await http(`${lab.originUrl}page`, {
      from: '127.0.0.2',
      proxy: { host: '127.0.0.1', port: lab.squidPort },
    })
  ).status;

/** Requests from alice's address, `clients` at a time, until `stop` resolves: each status counted. */
async function load(clients: number, stop: Promise<unknown>): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  let going = true;
  void stop.then(() => (going = false));
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (going) {
        const status = await browse();
        counts.set(status, (counts.get(status) ?? 0) + 1);
      }
    }),
  );
  return counts;
}

function servePid(): number | undefined {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  const line = out.split('\n').find((l) => / serve --config /.test(l) && l.includes(lab.configFile));
  return line === undefined ? undefined : Number(line.trim().split(' ')[0]);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('authd outlives the web app', () => {
  it('kill -9 of serve denies no identified client, and the next serve uses the running authd', async () => {
    expect(await browse()).toBe(200);
    const authd = runningAuthd(pidFile());
    expect(authd).toBeGreaterThan(0);
    const killed = servePid() as number;
    const counts = load(
      5,
      (async () => {
        await sleep(300);
        process.kill(killed, 'SIGKILL');
        await sleep(1500);
      })(),
    );
    expect(Object.fromEntries(await counts)).toEqual({ 200: expect.any(Number) as number });
    expect(runningAuthd(pidFile())).toBe(authd);
    serve = start(join(ROOT, 'bin', 'doorman'), ['serve', '--config', lab.configFile]);
    await waitForPort('127.0.0.1', lab.doormanPort, 10_000, serve.child);
    while (!serve.stderr().includes('authd answering')) await sleep(50);
    expect(serve.stderr()).toContain(`authd answering (pid ${authd},`);
    expect(serve.stderr()).not.toContain('authd started');
    expect(runningAuthd(pidFile())).toBe(authd);
    expect(await browse()).toBe(200);
  });

  it('a planned authd restart (doorman authd restart) under steady load denies nothing', async () => {
    const before = runningAuthd(pidFile()) as number;
    let restarted = '';
    const counts = load(
      10,
      (async () => {
        await sleep(500);
        restarted = (await lab.cli('authd', 'restart')).stdout;
        await sleep(1000);
      })(),
    );
    const seen = Object.fromEntries(await counts);
    expect(restarted).toMatch(new RegExp(`^authd restarted \\(pid ${before} -> \\d+\\)`));
    expect(seen).toEqual({ 200: expect.any(Number) as number });
    expect(seen[200]).toBeGreaterThan(20);
    expect(runningAuthd(pidFile())).not.toBe(before);
    expect(lab.cacheLog().join('\n')).not.toMatch(/answering BH/);
  });
});
