/**
 * What each event in the life of Doorman's processes does to identified clients browsing through a real Squid
 * at ttl=0 (every request asks authd): CLIENTS clients (default 20), each one request at a time, for BEFORE_MS
 * before and AFTER_MS after the event. Printed per event: requests, denied (anything but 200), the slowest
 * request and the longest time without any 200 (the gap). Run by bench/authd-events.sh; nothing is asserted
 * here (test/integration/authd-service.e2e.test.ts asserts the zeros).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pidFilePath, runningAuthd } from '../../helpers/authd/pid-file.ts';
import { loginClients, underLoad, type LoadFigures } from '../../test/harness/identified-load.ts';
import { ROOT, startExtraSquid, startLab, type ExtraSquid, type Lab } from '../../test/harness/lab.ts';
import { start, terminate, waitForPort, type Started } from '../../test/harness/processes.ts';

const CLIENTS = Number(process.env.CLIENTS ?? 20);
const BEFORE_MS = Number(process.env.BEFORE_MS ?? 1000);
const AFTER_MS = Number(process.env.AFTER_MS ?? 3000);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const lab: Lab = await startLab();
let serve: Started | undefined;
const extras: ExtraSquid[] = [];
try {
  const clients = await loginClients(lab, CLIENTS);
  const pidFile = pidFilePath(join(lab.dir, 'state', 'run'));
  const servePid = (): number => {
    const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
    const line = out.split('\n').find((l) => / serve --config /.test(l) && l.includes(lab.configFile));
    if (line === undefined) throw new Error('no doorman serve running');
    return Number(line.trim().split(' ')[0]);
  };
  const startServe = async () => {
    serve = start(join(ROOT, 'bin', 'doorman'), ['serve', '--config', lab.configFile]);
    await waitForPort('127.0.0.1', lab.doormanPort, 10_000, serve.child);
  };
  const rows: [string, LoadFigures][] = [];
  const measure = async (
    name: string,
    event: () => Promise<void>,
    squidPort = lab.squidPort,
    beforeMs = BEFORE_MS,
  ) => {
    const figures = await underLoad(
      { squidPort, url: `${lab.originUrl}page`, addresses: clients, beforeMs, afterMs: AFTER_MS },
      event,
    );
    rows.push([name, figures]);
    console.log(`${name}: ${JSON.stringify(figures)}`);
  };

  await measure('no event', async () => {});
  await measure('kill -9 of the web app (serve)', async () => {
    process.kill(servePid(), 'SIGKILL');
  });
  await measure('the web app started again', startServe);
  await measure(
    'planned authd restart (doorman authd restart)',
    async () => void (await lab.cli('authd', 'restart')),
  );
  await measure('kill -9 of authd (serve replaces it)', async () => {
    const pid = runningAuthd(pidFile);
    if (pid === undefined) throw new Error('no authd running');
    process.kill(pid, 'SIGKILL');
  });
  // Doorman stopped whole, started as the quick start does, and a Squid started the moment authd is ready.
  if (serve !== undefined) await terminate(serve);
  serve = undefined;
  await lab.cli('authd', 'stop');
  await startServe();
  await lab.cli('authd', 'status', '--wait', '30');
  const fresh = await startExtraSquid(lab, 'fresh');
  extras.push(fresh);
  await measure('a Squid started the moment Doorman reports ready', async () => {}, fresh.port, 0);
  await sleep(100);

  console.log(
    `\n${CLIENTS} identified clients through Squid (ttl=0), ${BEFORE_MS} ms before and ${AFTER_MS} ms after each event\n`,
  );
  console.log('| event | requests | denied | slowest request, ms | longest gap without a 200, ms |');
  console.log('|---|---:|---:|---:|---:|');
  for (const [name, f] of rows) {
    console.log(`| ${name} | ${f.requests} | ${f.denied} | ${f.maxLatencyMs} | ${f.longestGapMs} |`);
  }
} finally {
  for (const squid of extras) await squid.stop();
  if (serve !== undefined) await terminate(serve);
  await lab.stop();
}
