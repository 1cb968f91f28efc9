/**
 * Splash-page sign-ins per second (issue 7, Authentication mode): each of CONNS workers, on its own
 * keep-alive connection, naming its client address as Squid does (X-Doorman-Client with the proxy key), loads GET {base}portal/?url=… (a CSRF cookie and token), then POSTs the form with a directory user's
 * right password; the answer must be 303 to the original URL. Every sign-in comes from a new address
 * (10.100.0.0 onwards: a signed-in address would get the "connected" page), so the session table grows. Users are taken round-robin from
 * user0000..user(USERS-1) (the bench slapd's, password Passw0rd!). DURATION s measured after 1 s of warm-up.
 *
 *   node bench/lib/splash-load.ts --base http://127.0.0.1:P/ --proxy-key-file F [--connections 8]
 *        [--duration 10] [--users 1000] [--password Passw0rd!] [--label TEXT] [--server-pid PID]
 *        [--first-client N]   (the address to start from: a later run on the same DB passes the last next_client)
 *
 * Prints one JSON line: sign-ins/s (a GET + POST pair each), latency of the pair and of the POST alone
 * (p50/p99/max, µs), statuses, errors, and the server's CPU per sign-in when --server-pid is given.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { parseArgs } from 'node:util';
import { systemClock } from '../../lib/clock.ts';
import { PortalUrlSigner } from '../../lib/security/portal-url-signature.ts';

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    'proxy-key-file': { type: 'string' },
    connections: { type: 'string', default: '8' },
    duration: { type: 'string', default: '10' },
    users: { type: 'string', default: '1000' },
    password: { type: 'string', default: 'Passw0rd!' },
    label: { type: 'string', default: 'splash sign-ins' },
    'server-pid': { type: 'string' },
    'first-client': { type: 'string', default: '0' },
  },
});
if (values.base === undefined || values['proxy-key-file'] === undefined) {
  console.error('usage: splash-load.ts --base URL --proxy-key-file FILE [--connections N] [--duration S]');
  process.exit(2);
}
const base = new URL(values.base);
if (!/^127\.|^\[::1\]$|^localhost$/.test(base.hostname)) {
  console.error('refusing a non-loopback base URL');
  process.exit(2);
}
const proxyKey = readFileSync(values['proxy-key-file'], 'utf8').trim();
const portalUrls = new PortalUrlSigner(proxyKey, systemClock);
const connections = Number(values.connections);
const duration = Math.min(Number(values.duration), 60);
const users = Number(values.users);
const ORIGINAL = 'http://www.example.test/after-sign-in';
const portalPath = `${base.pathname}portal/`;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function call(
  agent: Agent,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: base.hostname, port: base.port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${path}: no answer in 10 s`)));
    req.end(body);
  });
}

const FIELD = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`);
const unescape = (s: string) =>
  s
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&amp;', '&');

const statuses: Record<string, number> = {};
const pairs: number[] = [];
const posts: number[] = [];
let errors = 0;
let firstError = '';
let measuring = false;
let stopping = false;
let nextUser = 0;
let nextClient = Number(values['first-client']);

const ticks = (): number | undefined => {
  if (values['server-pid'] === undefined) return undefined;
  const f = readFileSync(`/proc/${values['server-pid']}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return Number(f[11]) + Number(f[12]);
};

async function worker(): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let cookie = '';
  while (!stopping) {
    // A fresh client address for every sign-in: a signed-in address gets the "connected" page instead.
    const i = nextClient++;
    const client = `10.${100 + ((i >> 16) & 127)}.${(i >> 8) & 255}.${i & 255}`;
    const who = { 'X-Doorman-Client': `${proxyKey} ${client}` };
    const t0 = performance.now();
    try {
      // Signed as serve's ICAP service signs it (same key), so the sign-in goes on to ORIGINAL.
      const sig = portalUrls.sign(ORIGINAL, client);
      const page = await call(agent, 'GET', `${portalPath}?url=${encodeURIComponent(ORIGINAL)}&sig=${sig}`, {
        ...who,
        ...(cookie === '' ? {} : { Cookie: cookie }),
      });
      const set = page.headers['set-cookie'];
      if (set !== undefined)
        cookie = (Array.isArray(set) ? set : [set]).map((c) => c.split(';')[0]).join('; ');
      const csrf = FIELD('csrf').exec(page.body)?.[1];
      if (page.status !== 200 || csrf === undefined)
        throw new Error(`GET portal/: ${page.status}, csrf ${csrf === undefined ? 'missing' : 'found'}`);
      const form = new URLSearchParams({
        csrf: unescape(csrf),
        url: unescape(FIELD('url').exec(page.body)?.[1] ?? ORIGINAL),
        sig: unescape(FIELD('sig').exec(page.body)?.[1] ?? sig),
        username: `user${String(nextUser++ % users).padStart(4, '0')}`,
        password: values.password,
      });
      if (page.body.includes('id="agree"')) form.set('agree', 'yes');
      const t1 = performance.now();
      const done = await call(
        agent,
        'POST',
        portalPath,
        { ...who, Cookie: cookie, 'Content-Type': 'application/x-www-form-urlencoded' },
        form.toString(),
      );
      const t2 = performance.now();
      if (!measuring) continue;
      statuses[done.status] = (statuses[done.status] ?? 0) + 1;
      if (done.status !== 303 || done.headers.location !== ORIGINAL) {
        errors++;
        firstError ||= `POST: ${done.status} ${String(done.headers.location)} ${/data-code="([^"]+)"/.exec(done.body)?.[1] ?? ''}`;
        continue;
      }
      pairs.push((t2 - t0) * 1000);
      posts.push((t2 - t1) * 1000);
    } catch (error) {
      errors++;
      firstError ||= error instanceof Error ? error.message : String(error);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  agent.destroy();
}

const running = Array.from({ length: connections }, () => worker());
await new Promise((r) => setTimeout(r, 1000));
measuring = true;
const c0 = ticks();
const started = performance.now();
await new Promise((r) => setTimeout(r, duration * 1000));
measuring = false;
const seconds = (performance.now() - started) / 1000;
const c1 = ticks();
stopping = true;
await Promise.all(running);

const pct = (list: number[], q: number) => {
  if (list.length === 0) return null;
  const sorted = [...list].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);
};
const hz = 100;
console.log(
  JSON.stringify({
    label: values.label,
    connections,
    requests: pairs.length,
    seconds: Math.round(seconds * 1000) / 1000,
    per_sec: Math.round((pairs.length / seconds) * 10) / 10,
    lat_us: { p50: pct(pairs, 0.5), p99: pct(pairs, 0.99), max: pct(pairs, 1) },
    post_lat_us: { p50: pct(posts, 0.5), p99: pct(posts, 0.99), max: pct(posts, 1) },
    statuses,
    errors,
    /** The next --first-client for a later run on the same DB. */
    next_client: nextClient,
    ...(firstError === '' ? {} : { first_error: firstError }),
    ...(c0 === undefined || c1 === undefined || pairs.length === 0
      ? {}
      : { server_cpu_us_per_req: Math.round((((c1 - c0) / hz) * 1e6) / pairs.length) }),
  }),
);
process.exit(pairs.length > 0 ? 0 : 1);
