import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pidFilePath, runningAuthd } from '../../helpers/authd/pid-file.ts';
import { lookupUser } from '../../lib/system/service-user.ts';
import { ROOT, startLab, type Lab } from './lab.ts';
import { createNetns, netnsName, removeStaleNetns, type Netns } from './netns.ts';
import { startPostgres, type Postgres } from './postgres.ts';
import { start, terminate, waitForPort, type Started } from './processes.ts';
import type { RunResult } from './run.ts';

/**
 * A site of two proxies on one PostgreSQL, on one machine (issue 15's end-to-end test):
 *
 *   client ns  C=10.213.N.2 ==veth== host: H1=10.213.N.1  box A: doorman serve :8180, Squid :3128
 *                                          H2=10.213.N.5  box B: doorman serve :8180, Squid :3128
 *                                          127.0.0.1      PostgreSQL, the origin, each box's own loopback ports
 *
 * The client reaches both boxes over one link with one source address, as on a LAN with two proxies. Each box
 * is a lab (startLab: its own directory, stateDir, config, `doorman serve` with its authd, a standalone Squid)
 * whose config names the site's database as store, with the password in a 0600 file of the service user's.
 * Box A makes the API key; B has none of its own, so whatever B accepts it knows from the database.
 */
export interface Box {
  readonly name: string;
  readonly lab: Lab;
  /** Its address on the client's link: the web app on :8180, Squid on :3128. */
  readonly address: string;
  /** `http://<address>:8180/`. */
  readonly webUrl: string;
  /** `http://<address>:3128`, Squid as the client's explicit proxy. */
  readonly proxy: string;
  readonly stateDir: string;
  /** The running authd's pid (its pid file), if one runs. */
  authdPid(): number | undefined;
  /** authd's own log (stateDir/authd.log) so far. */
  authdLog(): string;
  /** serve's stderr so far: the lab's first serve, then each one started again, one after the other. */
  serveLog(): string;
  /**
   * Ask this box's authd for the users of `ips` over its session socket, as Squid's shims do (all lines at once,
   * channel IDs): the answer for each, in order.
   */
  lookup(ips: readonly string[]): Promise<SessionAnswer[]>;
  /** kill -9 of serve and of authd; resolves once both are gone. */
  killAll(): Promise<void>;
  /** Start serve again (it starts authd); resolves once both answer. */
  startServe(): Promise<void>;
}

export interface SessionAnswer {
  /** OK, ERR or BH. */
  result: string;
  /** The user of an OK, decoded. */
  user?: string;
}

export interface Site {
  readonly pg: Postgres;
  /** The client's namespace; its address is the identified device. */
  readonly client: Netns;
  readonly a: Box;
  readonly b: Box;
  /** A's API key (`doorman api-key create` on A), good on both boxes. */
  readonly apiKey: string;
  /** The origin behind both Squids, on 127.0.0.1. */
  readonly originUrl: string;
  /** curl inside the client's namespace; never rejects on an HTTP status. */
  curl(args: readonly string[], input?: string): Promise<RunResult>;
  /** Stop both boxes, PostgreSQL and the namespace, each by PID. */
  stop(): Promise<void>;
}

const NETNS_PREFIX = 'dm-pg';
const WEB_PORT = 8180;
const SQUID_PORT = 3128;

export async function startSite(): Promise<Site> {
  removeStaleNetns(NETNS_PREFIX);
  const stops: Array<() => Promise<void> | void> = [];
  const stop = async () => {
    for (const s of stops.splice(0).reverse()) await Promise.resolve(s()).catch(() => {});
  };
  try {
    const pg = await startPostgres();
    stops.push(() => pg.destroy());
    pg.createDatabase('doorman');
    const secrets = mkdtempSync(join(tmpdir(), 'doorman-pgpw-'));
    stops.push(() => rmSync(secrets, { recursive: true, force: true }));
    chmodSync(secrets, 0o755);
    const passwordFile = join(secrets, 'password');
    // authd and the web app read it as the service user; the file itself is theirs alone.
    writeFileSync(passwordFile, `${pg.password}\n`, { mode: 0o600 });
    const proxy = lookupUser('proxy');
    chownSync(passwordFile, proxy.uid, proxy.gid);

    const client = createNetns(netnsName(NETNS_PREFIX), []);
    stops.push(() => client.remove());
    // B's address: a second one on the host side of the same link, and the client's route to it.
    const secondAddress = client.hostAddress.replace(/\.1$/, '.5');
    execFileSync('ip', ['addr', 'add', `${secondAddress}/32`, 'dev', client.hostInterface]);
    execFileSync('ip', ['-n', client.name, 'route', 'add', `${secondAddress}/32`, 'via', client.hostAddress]);

    const store = { kind: 'postgres' as const, url: pg.url('doorman'), passwordFile };
    const a = await startBox('A', client.hostAddress, store, true);
    stops.push(() => a.stop());
    const b = await startBox('B', secondAddress, store, false);
    stops.push(() => b.stop());
    return {
      pg,
      client,
      a: a.box,
      b: b.box,
      apiKey: a.box.lab.apiKey,
      originUrl: a.box.lab.originUrl,
      curl: (args, input) =>
        client.exec('curl', ['-s', '--max-time', '5', ...args], {
          allowFailure: true,
          ...(input === undefined ? {} : { input }),
        }),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function startBox(
  name: string,
  address: string,
  store: { kind: 'postgres'; url: string; passwordFile: string },
  makesKey: boolean,
): Promise<{ box: Box; stop(): Promise<void> }> {
  const lab = await startLab({
    config: ({ doormanPort }) => ({
      baseUrl: `http://${address}:${WEB_PORT}/`,
      listen: [
        { host: address, port: WEB_PORT },
        { host: '127.0.0.1', port: doormanPort },
      ],
      store,
    }),
    squidPorts: [`${address}:${SQUID_PORT}`],
    apiKey: makesKey,
  });
  const stateDir = join(lab.dir, 'state');
  const runDir = join(stateDir, 'run');
  const serves: Started[] = [lab.serve];
  const authdPid = () => runningAuthd(pidFilePath(runDir));
  const box: Box = {
    name,
    lab,
    address,
    webUrl: `http://${address}:${WEB_PORT}/`,
    proxy: `http://${address}:${SQUID_PORT}`,
    stateDir,
    authdPid,
    authdLog: () => {
      const path = join(stateDir, 'authd.log');
      return existsSync(path) ? readFileSync(path, 'utf8') : '';
    },
    serveLog: () => serves.map((s) => s.stderr()).join('\n--- serve started again\n'),
    lookup: (ips) => askSessions(join(runDir, 'session.sock'), ips),
    async killAll() {
      const serve = serves.at(-1) as Started;
      const authd = authdPid();
      const exited = new Promise((resolve) => serve.child.once('exit', resolve));
      if (serve.child.exitCode === null && serve.child.signalCode === null) {
        serve.child.kill('SIGKILL');
        await exited;
      }
      if (authd !== undefined) {
        process.kill(authd, 'SIGKILL');
        await until(() => gone(authd), 5000, `authd (pid ${authd}) is still there after SIGKILL`);
      }
    },
    async startServe() {
      const serve = start(join(ROOT, 'bin', 'doorman'), ['serve', '--config', lab.configFile]);
      serves.push(serve);
      await waitForPort('127.0.0.1', lab.doormanPort, 10_000, serve.child);
      await lab.cli('authd', 'status', '--wait', '30');
    },
  };
  return {
    box,
    // The lab stops its first serve and authd; serves started again are this box's to stop first.
    stop: async () => {
      for (const serve of serves.slice(1)) await terminate(serve);
      await lab.stop();
    },
  };
}

/** Lookups in one write on one connection: at most this long for all the answers. */
const LOOKUP_TIMEOUT_MS = 10_000;

/** `ID IP -` lines for `ips` to an authd session socket; the answers, in the order of `ips`. */
export function askSessions(socketPath: string, ips: readonly string[]): Promise<SessionAnswer[]> {
  return new Promise((resolve, reject) => {
    const answers: SessionAnswer[] = new Array<SessionAnswer>(ips.length);
    let count = 0;
    let partial = '';
    const socket = connect(socketPath);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(`${socketPath}: ${count} of ${ips.length} lookups answered in ${LOOKUP_TIMEOUT_MS} ms`),
      );
    }, LOOKUP_TIMEOUT_MS);
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.on('data', (data: Buffer) => {
      const lines = (partial + data.toString('latin1')).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        const [id = '', result = '', ...pairs] = line.split(' ');
        const user = pairs.find((p) => p.startsWith('user='))?.slice('user='.length);
        answers[Number(id)] = { result, ...(user === undefined ? {} : { user: decodeURIComponent(user) }) };
        count += 1;
      }
      if (count < ips.length) return;
      clearTimeout(timer);
      socket.end();
      resolve(answers);
    });
    socket.write(ips.map((ip, i) => `${i} ${ip} -\n`).join(''));
  });
}

/**
 * Poll `check` until it holds; the milliseconds it took (measured from the call), or a rejection after
 * `timeoutMs` with `what` in the message. Tests assert the bound on the figure, so a miss shows how far off.
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await check()) return performance.now() - started;
    if (performance.now() - started > timeoutMs) throw new Error(`${what} (waited ${timeoutMs} ms)`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A process gone, or a zombie nobody has reaped yet (authd's parent was serve, killed too). */
function gone(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /, '')
      .startsWith('Z');
  } catch {
    return true;
  }
}
