import { execFile as execFileCb, execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { ConfigInput } from '../../lib/config/schema.ts';
import { lookupUser } from '../../lib/system/service-user.ts';
import { freePort, start, waitForFile, waitForPort, type Started } from './processes.ts';
import { run, type RunOptions, type RunResult } from './run.ts';

const execFile = promisify(execFileCb);
export const ROOT = resolve(import.meta.dirname, '..', '..');
const DOORMAN = join(ROOT, 'bin', 'doorman');

/**
 * What end-to-end tests need and cannot mock: a real Squid 5 running the generated configuration, a running
 * `doorman serve`, and an origin server. Requires root (Squid drops to its own user, which must be able to
 * read this checkout) and the Debian packages that .ci/run installs. Fails loudly when they are missing.
 */
export function requireSystem(): void {
  if (process.getuid?.() !== 0)
    throw new Error('integration tests run as root (Squid and its helper user); see docs/development.md');
  for (const tool of ['squid', 'setpriv']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`]);
    } catch {
      throw new Error(
        `${tool} is not installed: run scripts/install-system.sh test (see docs/development.md)`,
      );
    }
  }
  try {
    execFileSync('setpriv', [
      '--reuid=proxy',
      '--regid=proxy',
      '--clear-groups',
      'test',
      '-r',
      join(ROOT, 'dist', 'helpers', 'session-acl.js'),
    ]);
    execFileSync('setpriv', [
      '--reuid=proxy',
      '--regid=proxy',
      '--clear-groups',
      'test',
      '-x',
      join(ROOT, 'dist', 'bin', 'doorman-shim'),
    ]);
  } catch {
    throw new Error(
      `user proxy cannot read ${ROOT}, or there is no dist/bin/doorman-shim: Squid could not start the ` +
        'helpers (npm run build; give the parent directories o+x)',
    );
  }
}

export interface Lab {
  dir: string;
  configFile: string;
  doormanUrl: string;
  doormanPort: number;
  squidPort: number;
  originUrl: string;
  apiKey: string;
  /** Run the doorman CLI with this lab's config; rejects on a non-zero exit. */
  cli(...args: string[]): Promise<RunResult>;
  /** The same with run options: stdin `input`, `allowFailure`. */
  doorman(args: readonly string[], options?: RunOptions): Promise<RunResult>;
  /** access.log lines so far. */
  accessLog(): string[];
  /** cache.log lines so far (Squid's log, helpers' stderr included). */
  cacheLog(): string[];
  /** doorman serve's log so far, authd's included (what the helpers behind the shims say). */
  serveLog(): string[];
  /** The running `doorman serve`, for tests that stop it themselves (stop() then leaves it be). */
  serve: Started;
  stop(): Promise<void>;
}

export interface LabOptions {
  /**
   * Config fields on top of the lab's own (ports, state dir, trusted proxies); a function gets the port
   * `doorman serve` will listen on (to add a listen address or a baseUrl on it).
   */
  config?: Partial<ConfigInput> | ((ports: { doormanPort: number }) => Partial<ConfigInput>);
  /** Runs after Doorman is up and before Squid's configuration is generated (e.g. apply a directory). */
  beforeSquid?: (doorman: Lab['doorman']) => Promise<void>;
  /** More http_port addresses for Squid (ADDR:PORT, as `squid-conf --port` takes them), beside the lab's own. */
  squidPorts?: readonly string[];
  /**
   * Make an API key (`lab.apiKey`), the default. false: none, for a box of a site whose keys are shared with
   * another box that made one (a second `api-key create --name lab` would find the name taken).
   */
  apiKey?: boolean;
}

export async function startLab(options: LabOptions = {}): Promise<Lab> {
  requireSystem();
  const dir = mkdtempSync(join(tmpdir(), 'doorman-lab-'));
  chmodSync(dir, 0o755); // Squid's helpers (user proxy) read the config file in here
  const [doormanPort, squidPort, originPort] = [await freePort(), await freePort(), await freePort()];
  const configFile = join(dir, 'doorman.json');
  const config: ConfigInput = {
    baseUrl: `http://127.0.0.1:${doormanPort}/`,
    listen: [
      { host: '127.0.0.1', port: doormanPort },
      { host: '::1', port: doormanPort },
    ],
    // Squid reaches Doorman from 127.0.0.1; every other address is a client that must not be believed.
    trustedProxies: ['127.0.0.1'],
    stateDir: join(dir, 'state'),
    // Tests look right after a login or logout: no caching in Squid.
    squid: { ttl: 0, negativeTtl: 0, concurrency: 50, childrenMax: 2 },
    ...(typeof options.config === 'function' ? options.config({ doormanPort }) : options.config),
  };
  writeFileSync(configFile, JSON.stringify(config, null, 2), { mode: 0o644 });

  const doorman = (args: readonly string[], runOptions?: RunOptions) =>
    run(DOORMAN, [...args, '--config', configFile], runOptions);
  const cli = (...args: string[]) => doorman(args);
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const origin = await startOrigin(originPort);
    stops.push(() => new Promise((r) => origin.close(() => r())));

    const serve = start(DOORMAN, ['serve', '--config', configFile]);
    // authd outlives serve (docs/services.md): stopped on its own, after serve (stops run last first).
    stops.push(async () => void (await doorman(['authd', 'stop'], { allowFailure: true })));
    stops.push(() => serve.stop());
    await waitForPort('127.0.0.1', doormanPort, 10_000, serve.child).catch(failWith(serve));
    // Squid's helpers are shims relaying to authd, which serve starts: a shim that finds no socket answers
    // BH and tries again only a second later, so Squid starts once authd listens.
    await waitForFile(join(config.stateDir ?? '', 'run', 'session.sock'), 10_000).catch(failWith(serve));

    await options.beforeSquid?.(doorman);
    const squidDir = join(dir, 'squid');
    const conf = (
      await cli(
        'squid-conf',
        '--standalone',
        squidDir,
        '--port',
        `127.0.0.1:${squidPort}`,
        '--port',
        `[::1]:${squidPort}`,
        ...(options.squidPorts ?? []).flatMap((port) => ['--port', port]),
        '--loopback-dns',
      )
    ).stdout.trim();
    await execFile('squid', ['-k', 'parse', '-f', conf]);
    const squid = start('squid', ['-N', '-f', conf]);
    stops.push(() => squid.stop());
    await waitForPort('127.0.0.1', squidPort, 10_000, squid.child).catch(failWith(squid));

    const apiKey =
      options.apiKey === false ? '' : (await cli('api-key', 'create', '--name', 'lab')).stdout.trim();
    const logLines = (name: string) => {
      const path = join(squidDir, 'logs', name);
      return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : [];
    };
    return {
      dir,
      configFile,
      doormanUrl: `http://127.0.0.1:${doormanPort}/`,
      doormanPort,
      squidPort,
      originUrl: `http://127.0.0.1:${originPort}/`,
      apiKey,
      cli,
      doorman,
      accessLog: () => logLines('access.log'),
      cacheLog: () => logLines('cache.log'),
      serveLog: () => serve.stderr().split('\n').filter(Boolean),
      serve,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

function failWith(proc: Started) {
  return (error: Error) => {
    throw new Error(`${error.message}\n--- its stderr:\n${proc.stderr()}`);
  };
}

/** The origin behind Squid: answers 200 "origin" to anything, on 127.0.0.1:port. */
export function startOrigin(port: number): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain' }).end('origin\n');
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

export interface ExtraSquid {
  /** Its plain (explicit-proxy) port on 127.0.0.1. */
  port: number;
  /** access.log and cache.log lines so far. */
  log(name: 'access.log' | 'cache.log'): string;
  stop(): Promise<void>;
}

/**
 * A test Squid's configuration in `dir` (its logs in `dir/logs`, owned by Squid's user): a plain port on
 * 127.0.0.1, `ports` (whole lines), no cache, `before` and then `include`, then `deny all`. Returns its path.
 */
export function writeTestSquidConf(
  dir: string,
  options: { port: number; ports: readonly string[]; before: readonly string[]; include: string },
): string {
  mkdirSync(join(dir, 'logs'), { recursive: true });
  const proxy = lookupUser('proxy');
  chownSync(join(dir, 'logs'), proxy.uid, proxy.gid);
  const conf = join(dir, 'squid.conf');
  writeFileSync(
    conf,
    [
      `http_port 127.0.0.1:${options.port}`,
      ...options.ports,
      `pid_filename ${join(dir, 'squid.pid')}`,
      `cache_log ${join(dir, 'logs', 'cache.log')}`,
      `access_log stdio:${join(dir, 'logs', 'access.log')}`,
      `coredump_dir ${join(dir, 'logs')}`,
      'cache deny all',
      'pinger_enable off',
      'dns_nameservers 127.0.0.1',
      'shutdown_lifetime 0 seconds',
      ...options.before,
      `include ${options.include}`,
      'http_access deny all',
      '',
    ].join('\n'),
  );
  return conf;
}

/**
 * A second Squid running the lab's Doorman include inside a configuration of the test's own (an administrator's
 * rules before it, an intercept port), with its files in `lab.dir/name`. Ready once its plain port answers:
 * a connection straight to an intercept port has no NAT entry, and Squid's failed lookup stops that port.
 */
export async function startExtraSquid(
  lab: Lab,
  name: string,
  extra: { ports?: readonly string[]; before?: readonly string[] } = {},
): Promise<ExtraSquid> {
  const port = await freePort();
  const dir = join(lab.dir, name);
  const conf = writeTestSquidConf(dir, {
    port,
    ports: (extra.ports ?? []).map((p) => `http_port ${p}`),
    before: extra.before ?? [],
    include: join(lab.dir, 'squid', 'doorman.conf'),
  });
  await execFile('squid', ['-k', 'parse', '-f', conf]);
  const squid = start('squid', ['-N', '-f', conf]);
  await waitForPort('127.0.0.1', port, 10_000, squid.child).catch(failWith(squid));
  const log = (file: string) => {
    const path = join(dir, 'logs', file);
    return existsSync(path) ? readFileSync(path, 'utf8') : '';
  };
  return { port, log, stop: () => squid.stop() };
}
