import { execFile as execFileCb, execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { ConfigInput } from '../../lib/config/schema.ts';
import { freePort, start, waitForPort, type Started } from './processes.ts';

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
    throw new Error('integration tests run as root (Squid and its helper user); see README');
  for (const tool of ['squid', 'setpriv']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`]);
    } catch {
      throw new Error(`${tool} is not installed: run .ci/install-system (see README)`);
    }
  }
  try {
    execFileSync('setpriv', [
      '--reuid=proxy',
      '--regid=proxy',
      '--clear-groups',
      'test',
      '-r',
      join(ROOT, 'helpers', 'session-acl.ts'),
    ]);
  } catch {
    throw new Error(
      `user proxy cannot read ${ROOT}: Squid could not start the helpers (give the parent directories o+x)`,
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
  /** Run the doorman CLI with this lab's config. */
  cli(...args: string[]): Promise<{ stdout: string; stderr: string }>;
  /** access.log lines so far. */
  accessLog(): string[];
  stop(): Promise<void>;
}

export interface LabOptions {
  /** Config fields on top of the lab's own (ports, state dir, trusted proxies). */
  config?: Partial<ConfigInput>;
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
    ...options.config,
  };
  writeFileSync(configFile, JSON.stringify(config, null, 2), { mode: 0o644 });

  const cli = (...args: string[]) =>
    execFile(DOORMAN, [...args, '--config', configFile], { encoding: 'utf8' });
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const s of stops.reverse()) await s().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const origin = await startOrigin(originPort);
    stops.push(() => new Promise((r) => origin.close(() => r())));

    const doorman = start(DOORMAN, ['serve', '--config', configFile]);
    stops.push(() => doorman.stop());
    await waitForPort('127.0.0.1', doormanPort, 10_000, doorman.child).catch(failWith(doorman));

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
        '--loopback-dns',
      )
    ).stdout.trim();
    await execFile('squid', ['-k', 'parse', '-f', conf]);
    const squid = start('squid', ['-N', '-f', conf]);
    stops.push(() => squid.stop());
    await waitForPort('127.0.0.1', squidPort, 10_000, squid.child).catch(failWith(squid));

    const apiKey = (await cli('api-key', 'create', '--name', 'lab')).stdout.trim();
    const accessLogPath = join(squidDir, 'logs', 'access.log');
    return {
      dir,
      configFile,
      doormanUrl: `http://127.0.0.1:${doormanPort}/`,
      doormanPort,
      squidPort,
      originUrl: `http://127.0.0.1:${originPort}/`,
      apiKey,
      cli,
      accessLog: () =>
        existsSync(accessLogPath) ? readFileSync(accessLogPath, 'utf8').split('\n').filter(Boolean) : [],
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

/** The origin behind Squid: answers 200 "origin" to anything. */
function startOrigin(port: number): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain' }).end('origin\n');
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}
