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
import { createServer } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { freePort, terminate, type Started } from '../../test/harness/processes.ts';
import { startSambaAd, type SambaAd } from '../../test/harness/samba-ad.ts';
import {
  startSeamlessMember,
  startSeamlessProxy,
  type SeamlessMember,
} from '../../test/harness/seamless-member.ts';

const SILENT = (process.env.SILENT ?? '0 8 19').split(/\s+/).filter(Boolean).map(Number);
const N = Number(process.env.N ?? 20);
const HOLD_AFTER = (process.env.HOLD_AFTER ?? '1 4 6').split(/\s+/).filter(Boolean).map(Number);
const PASSWORD = 'Passw0rd!';
const TYPE_1 = 'TlRMTVNTUAABAAAAMrCI4gcABwAoAAAABwAHAC8AAAAGAbEdAAAAD0VYQU1QTEVDTElFTlQx';
const TYPE_3_WRONG = (() => {
  const bytes = Buffer.alloc(64);
  bytes.write('NTLMSSP\0', 'latin1');
  bytes.writeUInt32LE(3, 8);
  for (let field = 12; field < 60; field += 8) bytes.writeUInt32LE(64, field + 4);
  bytes.writeUInt32LE(0x00088205, 60);
  return bytes.toString('base64');
})();

let ad: SambaAd | undefined;
let member: SeamlessMember | undefined;
let serve: Started | undefined;
let squid: Started | undefined;
const origin = createServer((req, res) => {
  req.resume();
  res.writeHead(200).end('origin\n');
});

/** One request on a connection; resolves with the status line once the whole response is in. */
function exchange(socket: Socket, target: string, authorization: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number(/^Content-Length: (\d+)/im.exec(text.slice(0, end))?.[1] ?? 0);
      if (Buffer.byteLength(text, 'latin1') < end + 4 + length) return;
      socket.off('data', onData);
      resolve(text.slice(0, text.indexOf('\r\n')));
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(
      `GET ${target} HTTP/1.1\r\nHost: x\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: ${authorization}\r\n\r\n`,
    );
  });
}

async function silentClients(count: number, address: string, port: number, target: string) {
  return Promise.all(
    Array.from({ length: count }, async () => {
      const socket = connect(port, address);
      await new Promise((r) => socket.once('connect', r));
      const status = await exchange(socket, target, `NTLM ${TYPE_1}`);
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
function memoryOf(pid: number): { rss: number; pss: number } {
  try {
    const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    const pss = Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    return { rss, pss };
  } catch {
    return { rss: 0, pss: 0 };
  }
}
const mb = (kb: number) => (kb / 1024).toFixed(1);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

try {
  const [doormanPort, squidPort, originPort] = [await freePort(), await freePort(), await freePort()];
  await new Promise<void>((r) => origin.listen(originPort, '127.0.0.1', r));
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
    const res = await (member as SeamlessMember).exec(
      'curl',
      [
        '-s',
        '-o',
        '/dev/null',
        '-w',
        '%{http_code}',
        '--max-time',
        '30',
        '-x',
        `http://proxy.example.test:${squidPort}`,
        '--proxy-ntlm',
        '-U',
        `EXAMPLE\\alice:${PASSWORD}`,
        target,
      ],
      { allowFailure: true },
    );
    return { ms: performance.now() - started, status: res.stdout.slice(-3) };
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
    const status = await exchange(client.socket, target, `NTLM ${TYPE_3_WRONG}`).catch(
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
  origin.close();
}
