import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authdLogPath } from '../../helpers/authd/supervisor.ts';
import { helperSocket } from '../../lib/seamless/paths.ts';
import { startOrigin } from '../harness/lab.ts';
import { freePort, type Started, terminate } from '../harness/processes.ts';
import { startSambaAd, type SambaAd } from '../harness/samba-ad.ts';
import {
  proxyCurlStatus,
  startSeamlessMember,
  startSeamlessProxy,
  type SeamlessMember,
} from '../harness/seamless-member.ts';
import { SHIM } from '../harness/shim.ts';
import { NTLM_TYPE_1, NTLM_TYPE_3_EMPTY } from '../harness/ntlm-messages.ts';
import { proxyExchange } from '../harness/proxy-exchange.ts';

/**
 * Issue 14 §3 and §4 through a real Squid on the generated include, the proxy joined to a Samba AD domain:
 * clients that send NTLM's first message and go silent cannot starve NTLM for others (each holds a Squid
 * child and one ntlm_auth, the pool sized to Squid's children); shims closed right after a Negotiate line leave
 * authd holding nothing; and the doctor names the address whose handshakes carried NTLM.
 */
let ad: SambaAd;
let member: SeamlessMember;
let serve: Started | undefined;
let squid: Started | undefined;
let origin: Server;
let squidPort: number;
let doormanPort: number;
let originPort: number;
let squidDir: string;
const PASSWORD = 'Passw0rd!';
/** More silent clients than the 6 ntlm_auth processes the pool allowed before (2 more inside SPNEGO). */
const SILENT = 8;

beforeAll(async () => {
  [doormanPort, squidPort, originPort] = [await freePort(), await freePort(), await freePort()];
  origin = await startOrigin(originPort);
  ad = await startSambaAd();
  member = await startSeamlessMember(ad, {
    baseUrl: `http://127.0.0.1:${doormanPort}/`,
    listen: [{ host: '127.0.0.1', port: doormanPort }],
    trustedProxies: ['127.0.0.1'],
    squid: { ttl: 0, negativeTtl: 0 },
  });
  const enabled = await member.enable();
  if (enabled.code !== 0) throw new Error(`enable failed:\n${enabled.stdout}${enabled.stderr}`);
  ({ serve, squid, squidDir } = await startSeamlessProxy(member, { doorman: doormanPort, squid: squidPort }));
}, 180_000);

afterAll(async () => {
  await squid?.stop();
  if (serve !== undefined) await terminate(serve);
  for (const pid of authdPids()) process.kill(pid, 'SIGKILL');
  await member?.stop();
  await ad?.stop();
  await new Promise((r) => origin?.close(r));
});

const URL_ = () => `http://127.0.0.1:${originPort}/page`;
const cacheLog = () => readFileSync(join(squidDir, 'logs', 'cache.log'), 'utf8');

/** curl through Squid on the proxy host (which resolves proxy.example.test): the final status. */
async function curlStatus(args: readonly string[]): Promise<number> {
  return Number(await proxyCurlStatus(member, squidPort, [...args, URL_()]));
}

/** One more request on a client's open connection; resolves with the response head. */
function request(socket: Socket, authorization: string): Promise<string> {
  return proxyExchange(socket, { url: URL_(), host: `127.0.0.1:${originPort}`, authorization });
}

/**
 * A client that sends NTLM's type 1 and then says nothing more on its connection: resolves with the response
 * head Squid sent (a 407 carrying ntlm_auth's challenge, when a process was free for it); the socket stays open.
 */
function silentClient(): Promise<{ socket: Socket; head: string; closed: () => boolean }> {
  return new Promise((resolvePromise, reject) => {
    const socket = connect(squidPort, member.address);
    let closed = false;
    socket.on('close', () => (closed = true));
    socket.once('error', reject);
    socket.on('connect', () =>
      request(socket, `NTLM ${NTLM_TYPE_1}`).then(
        (head) => resolvePromise({ socket, head, closed: () => closed }),
        reject,
      ),
    );
  });
}

/** authd's PIDs (this test's config only): it may outlive serve, as a service of its own. */
function authdPids(): number[] {
  if (member === undefined) return [];
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (args.some((a) => a.endsWith('authd/main.js')) && args.includes(member.configFile))
        pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

describe('NTLM cannot be starved, through Squid with Samba AD', () => {
  it(`signs alice in by NTLM while ${SILENT} silent clients each hold an ntlm_auth after their type 1`, async () => {
    const silent = await Promise.all(Array.from({ length: SILENT }, () => silentClient()));
    for (const { head } of silent) {
      // Each got a challenge: ntlm_auth answered its type 1, so each holds a process.
      expect(head, cacheLog().slice(-2000)).toMatch(/^HTTP\/1\.1 407 /);
      expect(head).toMatch(/^Proxy-Authenticate: NTLM TlRMTVNTUAACAAAA/m);
    }
    expect(await curlStatus(['--proxy-ntlm', '-U', `EXAMPLE\\alice:${PASSWORD}`])).toBe(200);
    // The silent ones are still there, holding their Squid children: the sign-in did not wait for them to go.
    expect(silent.map((s) => s.closed())).toEqual(Array<boolean>(SILENT).fill(false));
    // ...and their ntlm_auth: the first of them now sends a (wrong) type 3, which its process still answers
    // (407), rather than authd saying the handshake was dropped (what a sign-in that waited for the silent
    // ones' leases to lapse would have found).
    const first = silent[0];
    if (first === undefined) throw new Error('no silent client');
    const late = await request(first.socket, `NTLM ${NTLM_TYPE_3_EMPTY}`);
    expect(late).toMatch(/^HTTP\/1\.1 407 /);
    expect(cacheLog()).not.toContain('after the handshake was dropped');
    for (const { socket } of silent) socket.destroy();
  }, 60_000);

  // A shim now answers every line before it exits at the end of its input, so the shims here die instead
  // (SIGKILL, as when Squid's children are killed): authd's answers then meet closed connections (EPIPE).
  // authd says at SIGTERM how many connections it still serves: none but Squid's own children's.
  it('200 shims killed right after a Negotiate line leave authd serving no connection of theirs', async () => {
    const path = helperSocket(member.stateDir, 'negotiate');
    const shims = Array.from({ length: 200 }, (_, i) => {
      const shim = spawn(SHIM, [path], { stdio: ['pipe', 'ignore', 'ignore'] });
      const exited = new Promise((r) => shim.once('exit', r));
      shim.stdin.on('error', () => {});
      shim.stdin.write(`YR ${NTLM_TYPE_1} 10.9.9.${i % 250}\n`);
      return { shim, exited };
    });
    // Some lines are answered by now, most are still waiting for an ntlm_auth: kill them all at once.
    await new Promise((r) => setTimeout(r, 200));
    for (const { shim } of shims) shim.kill('SIGKILL');
    await Promise.all(shims.map((s) => s.exited));
    // Let authd see every close (each frees at once; a leak would stay however long this is).
    await new Promise((r) => setTimeout(r, 2000));
    const squidChildren = shimsOfSquid();
    expect(squidChildren).toBeGreaterThan(0);
    await stopDoorman();
    const stops = [...stopped.matchAll(/stopping \((\d+) connections\)/g)];
    expect(stops.length, stopped).toBeGreaterThan(0);
    expect(Number(stops.at(-1)?.[1])).toBeLessThanOrEqual(squidChildren);
  }, 120_000);

  it('the doctor names the client address whose handshakes carried NTLM (written when authd stopped)', async () => {
    const doctor = await member.doorman(['seamless', 'doctor', '--json'], { allowFailure: true });
    const report = JSON.parse(doctor.stdout) as { checks: { id: string; status: string; detail: string }[] };
    const clients = report.checks.find((c) => c.id === 'clients-fqdn');
    expect(clients?.status, doctor.stdout).toBe('note');
    expect(clients?.detail).toMatch(
      new RegExp(`used NTLM in the last day: ${member.address.replaceAll('.', '\\.')} \\(\\d+ handshakes`),
    );
  }, 60_000);
});

/** serve's log once stopped, then authd's own (<stateDir>/authd.log, where the authd serve started writes). */
let stopped = '';

/** Stop serve and authd (which may outlive serve as a service of its own), SIGTERM: authd writes its counts. */
async function stopDoorman(): Promise<void> {
  if (serve !== undefined) {
    await terminate(serve);
    stopped = serve.stderr();
  }
  for (const pid of authdPids()) process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 100 && authdPids().length > 0; i++) await new Promise((r) => setTimeout(r, 100));
  if (serve !== undefined) stopped = serve.stderr();
  const authdLog = authdLogPath(member.stateDir);
  if (existsSync(authdLog)) stopped += readFileSync(authdLog, 'utf8');
}

/** Squid's helper children for this test (shims on this state directory's sockets). */
function shimsOfSquid(): number {
  let count = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      // Squid names its helpers' argv[0] '(doorman-shim)'.
      if (args[0]?.includes('doorman-shim') && args.some((a) => a.startsWith(member.stateDir))) count++;
    } catch {
      // gone meanwhile
    }
  }
  return count;
}
