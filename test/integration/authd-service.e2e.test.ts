import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pidFilePath, runningAuthd } from '../../helpers/authd/pid-file.ts';
import { loginClients, underLoad } from '../harness/identified-load.ts';
import { ROOT, startExtraSquid, startLab, type ExtraSquid, type Lab } from '../harness/lab.ts';
import { start, terminate, waitForPort, type Started } from '../harness/processes.ts';

/**
 * authd as a service of its own, through a real Squid at ttl=0 (every request asks the helper) with steady load
 * from 20 identified clients: the web app killed (-9), the web app started again (it uses the authd that is
 * running), a planned authd restart (doorman authd restart: the sockets handed to the successor, the shims
 * holding), and a Squid started the moment Doorman reports ready each deny no identified client.
 * bench/authd-events.sh prints the same figures, kill -9 of authd among them.
 */
let lab: Lab;
let serve: Started | undefined;
let fresh: ExtraSquid | undefined;
let clients: string[];
beforeAll(async () => {
  lab = await startLab();
  clients = await loginClients(lab, 20);
});
afterAll(async () => {
  await fresh?.stop();
  if (serve !== undefined) await terminate(serve);
  await lab?.stop();
});

const pidFile = () => pidFilePath(join(lab.dir, 'state', 'run'));
const load = (event: () => Promise<void>, squidPort = lab.squidPort, beforeMs = 500) =>
  underLoad({ squidPort, url: `${lab.originUrl}page`, addresses: clients, beforeMs }, event);

function servePid(): number | undefined {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  const line = out.split('\n').find((l) => / serve --config /.test(l) && l.includes(lab.configFile));
  return line === undefined ? undefined : Number(line.trim().split(' ')[0]);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `doorman serve` started again by the test (the lab's first one is gone), answering once authd does. */
async function startServe(): Promise<Started> {
  const started = start(join(ROOT, 'bin', 'doorman'), ['serve', '--config', lab.configFile]);
  await waitForPort('127.0.0.1', lab.doormanPort, 10_000, started.child);
  while (!/authd (?:answering|started)/.test(started.stderr())) await sleep(50);
  return started;
}

describe('authd outlives the web app', () => {
  it('kill -9 of serve denies no identified client, nor does its restart, which uses the running authd', async () => {
    const authd = runningAuthd(pidFile());
    expect(authd).toBeGreaterThan(0);
    const killed = servePid() as number;
    const killing = await load(async () => {
      process.kill(killed, 'SIGKILL');
      await sleep(1500);
    });
    expect(killing).toMatchObject({ denied: 0 });
    expect(killing.requests).toBeGreaterThan(clients.length);
    expect(runningAuthd(pidFile())).toBe(authd);

    const restarting = await load(async () => {
      serve = await startServe();
    });
    expect(restarting).toMatchObject({ denied: 0 });
    expect(serve?.stderr()).toContain(`authd answering (pid ${authd},`);
    expect(serve?.stderr()).not.toContain('authd started');
    expect(runningAuthd(pidFile())).toBe(authd);
  });

  it('a planned authd restart (doorman authd restart) under steady load denies nothing', async () => {
    const before = runningAuthd(pidFile()) as number;
    let restarted = '';
    const seen = await load(async () => {
      restarted = (await lab.cli('authd', 'restart')).stdout;
    });
    expect(restarted).toMatch(new RegExp(`^authd restarted \\(pid ${before} -> \\d+\\)`));
    expect(seen).toMatchObject({ denied: 0 });
    expect(seen.requests).toBeGreaterThan(clients.length);
    expect(runningAuthd(pidFile())).not.toBe(before);
    expect(lab.cacheLog().join('\n')).not.toMatch(/answering BH/);
  });

  it('a Squid started the moment Doorman reports ready denies no identified client its first requests', async () => {
    // Doorman stopped whole (the web app and authd), then started as the quick start does: serve, which starts
    // authd, and `doorman authd status --wait` for "ready".
    if (serve !== undefined) await terminate(serve);
    serve = undefined;
    await lab.cli('authd', 'stop');
    serve = start(join(ROOT, 'bin', 'doorman'), ['serve', '--config', lab.configFile]);
    expect((await lab.cli('authd', 'status', '--wait', '30')).stdout).toMatch(/answer/);
    fresh = await startExtraSquid(lab, 'fresh');
    const squid = fresh;
    const first = await load(async () => {}, squid.port, 0);
    expect(first).toMatchObject({ denied: 0 });
    expect(squid.log('cache.log')).not.toMatch(/BH/);
  });
});
