/**
 * Load generator for the login API: POST {baseUrl}api/login/ with api_key and username, N keep-alive
 * connections with one request in flight on each, bounded by time and by count.
 *
 *   node bench/lib/login-load.ts --url http://127.0.0.1:8190/api/login/ --key-file FILE
 *        [--connections 50] [--duration 10] [--warmup 1] [--clients 100000] [--first 0]
 *        [--mode proxied|src] [--proxy-key-file FILE] [--src-base 127.0.2.1] [--max-requests 5000000]
 *        [--users same|next] [--label TEXT]
 *
 * Who logs in (the session's address):
 *   --mode proxied  (default) every connection comes from 127.0.0.1, which the server must list in
 *               trustedProxies, and each request names its client as Squid does, in X-Doorman-Client with the
 *               proxy key read from --proxy-key-file (<stateDir>/proxy-key): client i is 10.a.b.c for
 *               i = first + (a permutation of 0..clients-1, fixed seed) — the anchors' key scheme, so with
 *               --first 0 every login replaces a session that make-sessions.ts preloaded. A run longer than
 *               `clients` logins wraps around.
 *   --mode src  no header: connection k binds to src-base + k (127.0.0.0/8), so there are only `connections`
 *               distinct clients, each logging in again and again.
 * Who is logged in (--users):
 *   same   (default) client i as user i: with --first 0 each login renews the session make-sessions.ts
 *          preloaded on its address (the same user by the same way in), as a device manager re-posting does
 *   next   client i as user i + p + 1 on the p-th pass over the clients: each login takes its address from
 *          another user (a replacement, with what the store and the audit trail do for one)
 * Requests during the first --warmup seconds are sent but not counted. Every 200 answer must name the address
 * sent (JSON "ip"); others are counted under "mismatched". With --server-pid, the server's CPU time during the
 * measured seconds (from /proc) and its RSS at the end are reported too. Prints one JSON line.
 */
import { Agent, request } from 'node:http';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { benchKey, isLoginUsers, type LoginUsers, loginUser, shuffledIndexes } from './figures.ts';

const { values: o } = parseArgs({
  options: {
    url: { type: 'string' },
    key: { type: 'string' },
    'key-file': { type: 'string' },
    connections: { type: 'string', default: '50' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '1' },
    clients: { type: 'string', default: '100000' },
    first: { type: 'string', default: '0' },
    mode: { type: 'string', default: 'proxied' },
    'proxy-key-file': { type: 'string' },
    'src-base': { type: 'string', default: '127.0.2.1' },
    'max-requests': { type: 'string', default: '5000000' },
    users: { type: 'string', default: 'same' },
    label: { type: 'string', default: '' },
    'server-pid': { type: 'string' },
  },
});

const fail = (message: string): never => {
  console.error(`login-load: ${message}`);
  process.exit(2);
};
const url = new URL(o.url ?? fail('--url is required'));
if (!/^127\./.test(url.hostname)) fail('refusing a non-loopback URL');
const apiKey =
  o.key ??
  (o['key-file'] === undefined ? undefined : readFileSync(o['key-file'], 'utf8').trim()) ??
  fail('--key or --key-file is required');
const connections = Number(o.connections);
const duration = Number(o.duration);
const warmup = Number(o.warmup);
const clients = Number(o.clients);
const first = Number(o.first);
const maxRequests = Number(o['max-requests']);
const mode = o.mode;
if (mode !== 'proxied' && mode !== 'src') fail('--mode is proxied or src');
const proxyKey =
  mode !== 'proxied'
    ? ''
    : o['proxy-key-file'] === undefined
      ? fail('--mode proxied needs --proxy-key-file')
      : readFileSync(o['proxy-key-file'], 'utf8').trim();
if (!(duration > 0 && duration <= 60)) fail('--duration must be 1..60 s');
const users: LoginUsers = isLoginUsers(o.users) ? o.users : fail('--users is same or next');

const serverPid = o['server-pid'];
/** utime + stime of the server, seconds (/proc/PID/stat fields 14 and 15, in USER_HZ = 100 on Linux). */
const serverCpu = (): number | null => {
  if (serverPid === undefined) return null;
  const stat = readFileSync(`/proc/${serverPid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};
const serverRssKb = (which: 'VmRSS' | 'VmHWM'): number | null => {
  if (serverPid === undefined) return null;
  const m = new RegExp(`^${which}:\\s+(\\d+) kB`, 'm').exec(
    readFileSync(`/proc/${serverPid}/status`, 'utf8'),
  );
  return m ? Number(m[1]) : null;
};

const dotted = (n: number): string => `${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
const srcBase = o['src-base'].split('.').reduce((n, part) => n * 256 + Number(part), 0);
if (mode === 'src' && (srcBase >>> 24 !== 127 || (srcBase + connections - 1) >>> 24 !== 127))
  fail('--src-base range must stay in 127.0.0.0/8');

// A fixed permutation of the client indexes (fixed seed), so consecutive logins hit addresses spread over
// the whole table, the same ones in every run.
const order = shuffledIndexes(clients);

const agent = new Agent({
  keepAlive: true,
  maxSockets: connections,
  maxFreeSockets: connections,
  scheduling: 'fifo',
});
const latencies = new Float64Array(Math.min(maxRequests, 5_000_000));
const statuses: Record<string, number> = {};
let sent = 0;
let counted = 0;
let errors = 0;
let mismatched = 0;
let measuring = false;
let stopping = false;
let sample = '';

function loginOnce(worker: number): Promise<void> {
  const n = sent++;
  const index = order[n % clients] as number;
  const ip = mode === 'proxied' ? benchKey(first + index) : dotted(srcBase + worker);
  const user = loginUser(users, index, n, clients);
  const body = `api_key=${encodeURIComponent(apiKey)}&username=user${String(user % 100000).padStart(5, '0')}`;
  const headers: Record<string, string | number> = {
    'Content-Type': 'application/x-www-form-urlencoded',
    'Content-Length': Buffer.byteLength(body),
  };
  if (mode === 'proxied') headers['X-Doorman-Client'] = `${proxyKey} ${ip}`;
  const counts = measuring;
  const started = process.hrtime.bigint();
  return new Promise((resolve) => {
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers,
        ...(mode === 'src' ? { localAddress: ip } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const us = Number(process.hrtime.bigint() - started) / 1e3;
          const text = Buffer.concat(chunks).toString('utf8');
          if (sample === '') sample = text.slice(0, 200);
          if (counts && measuring) {
            const status = String(res.statusCode);
            statuses[status] = (statuses[status] ?? 0) + 1;
            if (res.statusCode === 200 && !text.includes(`"ip":"${ip}"`)) mismatched++;
            if (counted < latencies.length) latencies[counted] = us;
            counted++;
          }
          resolve();
        });
      },
    );
    req.on('error', () => {
      errors++;
      resolve();
    });
    req.end(body);
  });
}

async function worker(k: number): Promise<void> {
  while (!stopping && sent < maxRequests) await loginOnce(k);
}

const workers = Array.from({ length: connections }, (_, k) => worker(k));
await new Promise((r) => setTimeout(r, warmup * 1000));
measuring = true;
const cpu0 = process.cpuUsage();
const serverCpu0 = serverCpu();
const t0 = process.hrtime.bigint();
await new Promise((r) => setTimeout(r, duration * 1000));
measuring = false;
const t1 = process.hrtime.bigint();
const cpu = process.cpuUsage(cpu0);
const serverCpu1 = serverCpu();
stopping = true;
await Promise.all(workers);
agent.destroy();

const seconds = Number(t1 - t0) / 1e9;
const n = Math.min(counted, latencies.length);
const sorted = latencies.slice(0, n).sort();
const pct = (q: number): number | null =>
  n ? +(sorted[Math.min(n - 1, Math.floor(q * n))] as number).toFixed(1) : null;
console.log(
  JSON.stringify({
    label: o.label,
    mode,
    connections,
    clients: mode === 'proxied' ? clients : connections,
    requests: counted,
    seconds: +seconds.toFixed(3),
    per_sec: +(counted / seconds).toFixed(1),
    lat_us: {
      p50: pct(0.5),
      p90: pct(0.9),
      p99: pct(0.99),
      max: n ? +(sorted[n - 1] as number).toFixed(1) : null,
    },
    statuses,
    errors,
    mismatched,
    driver_cpu_s: +((cpu.user + cpu.system) / 1e6).toFixed(2),
    ...(serverCpu0 === null || serverCpu1 === null
      ? {}
      : {
          server_cpu_s: +(serverCpu1 - serverCpu0).toFixed(2),
          server_cpu_us_per_req: counted ? +((1e6 * (serverCpu1 - serverCpu0)) / counted).toFixed(1) : null,
          server_rss_kb: serverRssKb('VmRSS'),
          server_peak_rss_kb: serverRssKb('VmHWM'),
        }),
    sample,
  }),
);
process.exit(counted > 0 && (statuses['200'] ?? 0) === counted && mismatched === 0 ? 0 : 1);
