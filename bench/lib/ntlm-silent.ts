/**
 * bench/lib/ntlm-silent.ts (run by bench/ntlm-silent.sh, as root, pinned Node): NTLM sign-ins through a real
 * Squid 5.7 on the generated include while K clients hold an ntlm_auth each (their type 1 sent, then silence),
 * on a proxy joined to a real Samba AD DC (the test harness's samba-ad.ts and seamless-member.ts), issue 14 §3.
 *
 *  1. For K in SILENT ("0 8 19"): K silent clients, then N sign-ins (`curl --proxy-ntlm`, one after another,
 *     each a new connection): each sign-in's wall time (median, max) and its status.
 *  2. How long a silent client holds its ntlm_auth: its type 3 sent after T s (T in HOLD_AFTER, "1 4 6") is
 *     answered by its process (407 from ntlm_auth's refusal) or by authd's BH "dropped" (the 5 s limit).
 *  3. Memory of the ntlm_auth pool with K processes held: RSS and PSS summed and per process.
 *
 * Figures are printed, never asserted. Env: SILENT, N (20), HOLD_AFTER, KEEP=1 keeps the member's directory.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { startOrigin } from '../../test/harness/lab.ts';
import { freePort, terminate, type Started } from '../../test/harness/processes.ts';
import { startSambaAd, type SambaAd } from '../../test/harness/samba-ad.ts';
import {
  proxyCurlStatus,
  startSeamlessMember,
  startSeamlessProxy,
  type SeamlessMember,
} from '../../test/harness/seamless-member.ts';
import { memoryOf } from './proc-memory.ts';
import { NTLM_TYPE_1, NTLM_TYPE_3_EMPTY } from '../../test/harness/ntlm-messages.ts';
import { proxyExchange } from '../../test/harness/proxy-exchange.ts';

const SILENT = (process.env.SILENT ?? '0 8 19').split(/\s+/).filter(Boolean).map(Number);
const N = Number(process.env.N ?? 20);
const HOLD_AFTER = (process.env.HOLD_AFTER ?? '1 4 6').split(/\s+/).filter(Boolean).map(Number);
const PASSWORD = 'Passw0rd!';
let ad: SambaAd | undefined;
let member: SeamlessMember | undefined;
let serve: Started | undefined;
let squid: Started | undefined;
let origin: Server | undefined;

/** One request on a connection; resolves with the status line once the whole response is in. */
async function exchange(socket: Socket, target: string, authorization: string): Promise<string> {
  const head = await proxyExchange(socket, { url: target, host: 'x', authorization });
  return head.slice(0, head.indexOf('\r\n'));
}

async function silentClients(count: number, address: string, port: number, target: string) {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const socket = connect(port, address);
      await new Promise((r) => socket.once('connect', r));
      const status = await exchange(socket, target, `NTLM ${NTLM_TYPE_1}`);
      return { socket, status };
    }),
  );
}

function ntlmAuthPids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        const args = readFileSync(`/proc/${name}/cmdline`, 'utf8');
        return args.startsWith('/usr/bin/ntlm_auth') && args.includes(member?.dir ?? '\0');
      } catch {
        return false;
      }
    })
    .map(Number);
}
const mb = (kb: number) => (kb / 1024).toFixed(1);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

try {
  const [doormanPort, squidPort, originPort] = [await freePort(), await freePort(), await freePort()];
  origin = await startOrigin(originPort);
  const target = `http://127.0.0.1:${originPort}/`;
  ad = await startSambaAd();
  member = await startSeamlessMember(ad, {
    baseUrl: `http://127.0.0.1:${doormanPort}/`,
    listen: [{ host: '127.0.0.1', port: doormanPort }],
    squid: { ttl: 0, negativeTtl: 0 },
  });
  const enabled = await member.enable();
  if (enabled.code !== 0) throw new Error(`enable failed:\n${enabled.stdout}${enabled.stderr}`);
  ({ serve, squid } = await startSeamlessProxy(member, { doorman: doormanPort, squid: squidPort }));
  const signIn = async (): Promise<{ ms: number; status: string }> => {
    const started = performance.now();
    const status = await proxyCurlStatus(
      member as SeamlessMember,
      squidPort,
      ['--proxy-ntlm', '-U', `EXAMPLE\\alice:${PASSWORD}`, target],
      30,
    );
    return { ms: performance.now() - started, status };
  };
  await signIn(); // warm: the pool's first process, Squid's first child
  console.log(
    `1. NTLM sign-ins through Squid (curl --proxy-ntlm, ${N} one after another) while K clients hold a type 1`,
  );
  for (const k of SILENT) {
    const silent = await silentClients(k, member.address, squidPort, target);
    const challenged = silent.filter((s) => s.status.includes(' 407')).length;
    const runs: { ms: number; status: string }[] = [];
    for (let i = 0; i < N; i++) runs.push(await signIn());
    const statuses = [...new Set(runs.map((r) => r.status))].join(',');
    console.log(
      `  K=${String(k).padStart(2)}: ${challenged}/${k} silent got a challenge; sign-in median ${median(runs.map((r) => r.ms)).toFixed(0)} ms, max ${Math.max(...runs.map((r) => r.ms)).toFixed(0)} ms (each includes starting curl in the member's mount namespace); statuses ${statuses}`,
    );
    if (k === Math.max(...SILENT)) {
      const pids = ntlmAuthPids();
      const m = pids.map(memoryOf);
      const rss = m.reduce((a, b) => a + b.rss, 0);
      const pss = m.reduce((a, b) => a + b.pss, 0);
      console.log(
        `3. ntlm_auth with K=${k} held: ${pids.length} processes, RSS ${mb(rss)} MB (${mb(rss / Math.max(1, pids.length))} each), PSS ${mb(pss)} MB (${mb(pss / Math.max(1, pids.length))} each)`,
      );
    }
    for (const s of silent) s.socket.destroy();
    await new Promise((r) => setTimeout(r, 500));
  }
  console.log('2. A silent client sends its type 3 after T s: who answers');
  for (const t of HOLD_AFTER) {
    const [client] = await silentClients(1, member.address, squidPort, target);
    if (client === undefined) continue;
    await new Promise((r) => setTimeout(r, t * 1000));
    const before = readFileSync(join(member.dir, 'squid', 'logs', 'cache.log'), 'utf8').length;
    const status = await exchange(client.socket, target, `NTLM ${NTLM_TYPE_3_EMPTY}`).catch(
      (e: Error) => e.message,
    );
    const log = readFileSync(join(member.dir, 'squid', 'logs', 'cache.log'), 'utf8').slice(before);
    const dropped = log.includes('after the handshake was dropped');
    console.log(
      `  T=${t} s: ${status}; ${dropped ? 'authd had released its ntlm_auth (BH: dropped after its YR)' : 'its ntlm_auth still held it (refused the type 3)'}`,
    );
    client.socket.destroy();
  }
} finally {
  await squid?.stop();
  if (serve !== undefined) await terminate(serve);
  if (process.env.KEEP !== '1') await member?.stop();
  else if (member !== undefined) console.log(`kept ${member.dir}`);
  await ad?.stop();
  origin?.close();
}
