/**
 * A real doorman-authd for the several-proxies bench (dist/helpers/authd/main.js, as serve starts it, on a
 * config naming its store), timed from its spawn to its first OK for a session it must know; and session
 * lookups through the real shim (dist/bin/doorman-shim --concurrent on authd's session socket), driven by the
 * anchors kit's helper-bench.js as bench/session-helper.sh drives helpers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { helperSocket } from '../../lib/seamless/paths.ts';
import { cpuMsOf } from './proc-cpu.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const AUTHD = join(ROOT, 'dist', 'helpers', 'authd', 'main.js');
const SHIM = join(ROOT, 'dist', 'bin', 'doorman-shim');
const PROBE_EVERY_MS = 10;

export interface Authd {
  readonly pid: number;
  /** From spawn to the first OK answer on its session socket for `knownKey`, ms. */
  readonly coldStartMs: number;
  /** The answers before it (BH while loading), how many. */
  readonly notYet: number;
  readonly socket: string;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it has exited. */
  stop(): Promise<void>;
}

/**
 * Start authd on `config` (whose stateDir is `stateDir`), its log to `logFile`, and time it until a lookup of
 * `knownKey` on its session socket is answered OK (given up after `timeoutMs`).
 */
export async function startAuthd(options: {
  config: string;
  stateDir: string;
  logFile: string;
  knownKey: string;
  timeoutMs?: number;
}): Promise<Authd> {
  const socket = helperSocket(options.stateDir, 'session');
  const log = createWriteStream(options.logFile);
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--max-semi-space-size=2', AUTHD, '--config', options.config], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr?.pipe(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = () => stopChild(child, exited);
  try {
    const notYet = await firstOk(socket, options.knownKey, child, options.timeoutMs ?? 120_000);
    const coldStartMs = Math.round(performance.now() - t0);
    return { pid: child.pid ?? 0, coldStartMs, notYet, socket, stop };
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}; authd's log: ${readFileSync(options.logFile, 'utf8')}`);
  }
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Ask `key` on the socket every PROBE_EVERY_MS until an OK; how many answers were something else first. */
async function firstOk(socket: string, key: string, child: ChildProcess, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  const pause = () => new Promise((resolve) => setTimeout(resolve, PROBE_EVERY_MS));
  let notYet = 0;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`authd exited with ${child.exitCode}`);
    if (performance.now() > deadline)
      throw new Error(`authd did not answer OK for ${key} in ${timeoutMs} ms`);
    if (!existsSync(socket)) {
      await pause();
      continue;
    }
    const answer = await askOnce(socket, key).catch(() => '');
    if (/^0 OK\b/.test(answer)) return notYet;
    if (answer !== '') notYet++;
    await pause();
  }
}

/** One lookup on a connection of its own (channel 0): the answer line, or '' if the socket is not up yet. */
function askOnce(socket: string, key: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const conn = connect(socket);
    let got = '';
    conn.setTimeout(5000, () => conn.destroy(new Error('no answer in 5 s')));
    conn.on('connect', () => conn.write(`0 ${key}\n`));
    conn.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      const end = got.indexOf('\n');
      if (end >= 0) {
        conn.end();
        resolve(got.slice(0, end));
      }
    });
    conn.on('error', reject);
    conn.on('close', () => resolve(''));
  });
}

export interface ShimLookups {
  requests: number;
  per_sec: number;
  lat_us: { p50: number; p99: number; max: number };
  replies: Record<string, number>;
  /** The shim's peak RSS (GNU time), kB. */
  helper_peak_rss_kb: number | null;
  /** authd's CPU per lookup over the run, µs. */
  authd_cpu_us_per_lookup: number;
  seconds: number;
  /** Why the driver stopped early, if it did. */
  stopped?: string;
}

/**
 * The kit's helper-bench.js (bare `node`, Node 20, as the anchors were measured) sending the lines of
 * `requests` through a shim on authd's session socket, `inflight` at a time (channel-IDs); its result, with
 * authd's CPU per lookup from /proc.
 */
export async function shimLookups(options: {
  kit: string;
  socket: string;
  requests: string;
  inflight: number;
  authdPid: number;
  label: string;
}): Promise<ShimLookups> {
  const cpu0 = cpuMsOf(options.authdPid);
  const args = [
    join(options.kit, 'lib', 'helper-bench.js'),
    '--label',
    options.label,
    '--concurrency',
    String(options.inflight),
    '--requests',
    options.requests,
    '--',
    SHIM,
    '--concurrent',
    options.socket,
  ];
  const out = await new Promise<string>((resolve, reject) => {
    const driver = spawn('node', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    driver.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    driver.once('error', reject);
    // It exits 1 when not every request was answered: its JSON says how many were.
    driver.once('exit', (code) =>
      stdout.includes('{') ? resolve(stdout) : reject(new Error(`helper-bench.js exited with ${code}`)),
    );
  });
  const r = JSON.parse(out.trim().split('\n').at(-1) ?? '{}') as ShimLookups & { stopped?: string | null };
  const lookups = Object.values(r.replies).reduce((a, b) => a + b, 0);
  const cpuMs = cpuMsOf(options.authdPid) - cpu0;
  return {
    requests: r.requests,
    per_sec: r.per_sec,
    lat_us: r.lat_us,
    replies: r.replies,
    helper_peak_rss_kb: r.helper_peak_rss_kb,
    seconds: r.seconds,
    authd_cpu_us_per_lookup: lookups === 0 ? 0 : Math.round((cpuMs * 1000) / lookups),
    ...(r.stopped ? { stopped: r.stopped } : {}),
  };
}
