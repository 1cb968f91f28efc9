import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { form, http } from '../harness/http.ts';
import { loginClients, underLoad } from '../harness/identified-load.ts';
import { startSite, until, type Box, type Site } from '../harness/pg-boxes.ts';

/**
 * Several proxies, one identity (issue 15): one PostgreSQL and two boxes, each a real Squid 5 with `doorman
 * serve` and its authd, the client in a network namespace of its own reaching both over one link with one
 * address (pg-boxes.ts draws it). What one box does, the other honours: logins, logouts and splash-page
 * agreements within a second, a burst of 5,000 logins to the last one, the logins a killed box acknowledged,
 * and PostgreSQL going away and coming back; a restarted authd answers from a full load at once.
 */
let site: Site;
let a: Box;
let b: Box;
let scratch: string;
beforeAll(async () => {
  site = await startSite();
  ({ a, b } = site);
  scratch = mkdtempSync(join(tmpdir(), 'doorman-several-'));
}, 60_000);
afterAll(async () => {
  await site?.stop();
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

/** The identified device: the client namespace's address. */
const client = () => site.client.address;
const page = () => `${site.originUrl}page`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The client fetches the origin through `box`'s Squid: the status (0: no answer). */
async function browse(box: Box): Promise<number> {
  const { stdout } = await site.curl(['-o', '/dev/null', '-w', '%{http_code}', '-x', box.proxy, page()]);
  return Number(stdout);
}

/** Until the client's fetch through `box`'s Squid is answered `status`: how long that took, ms. */
const squidAnswers = (box: Box, status: number) =>
  until(
    async () => (await browse(box)) === status,
    5000,
    `${box.name}'s Squid never answered the client ${status}`,
  );

interface ApiAnswer {
  status: number;
  headers: string;
  body: string;
}

/** The client POSTs to `box`'s login API (the key on stdin, not in curl's argv). */
async function api(box: Box, action: 'login' | 'logout', username?: string): Promise<ApiAnswer> {
  const fields = new URLSearchParams({
    api_key: site.apiKey,
    ...(username === undefined ? {} : { username }),
  });
  const { stdout } = await site.curl(
    [
      '-D',
      '-',
      '-H',
      'content-type: application/x-www-form-urlencoded',
      '--data-binary',
      '@-',
      `${box.webUrl}api/${action}/`,
    ],
    fields.toString(),
  );
  const end = stdout.indexOf('\r\n\r\n');
  const headers = stdout.slice(0, end);
  return {
    status: Number(/^HTTP\/[\d.]+ (\d{3})/.exec(headers)?.[1] ?? 0),
    headers,
    body: stdout.slice(end + 4),
  };
}

/** Until `box`'s Squid logged a 200 for the client as `user` (its log daemon writes a moment after). */
const loggedAs = (box: Box, user: string) =>
  until(
    () =>
      box.lab.accessLog().some((line) => {
        const f = line.split(/\s+/);
        return (
          f[2] === client() && f[3]?.endsWith('/200') === true && decodeURIComponent(f[7] ?? '') === user
        );
      }),
    2000,
    `${box.name}'s access.log has no 200 for ${client()} as ${user}`,
  );

/** `count` host-namespace client addresses 127.0.<x>.<y>, from 127.0.<firstX>.1 on (250 a /24). */
const addresses = (firstX: number, count: number): string[] =>
  Array.from({ length: count }, (_, i) => `127.0.${firstX + Math.floor(i / 250)}.${(i % 250) + 1}`);

/**
 * Logins through `box`'s loopback listener, `concurrency` at a time, user `${prefix}${i}` from ips[i]: the
 * addresses A answered 200 (the web app keys the session by the TCP peer). `onOk` sees the count after each.
 */
async function burst(
  box: Box,
  ips: readonly string[],
  prefix: string,
  onOk: (count: number) => void = () => {},
  concurrency = 100,
): Promise<string[]> {
  const acknowledged: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < ips.length) {
      const i = next++;
      const from = ips[i] as string;
      const f = form({ api_key: site.apiKey, username: `${prefix}${i}` });
      const status = await http(`${box.lab.doormanUrl}api/login/`, {
        method: 'POST',
        from,
        body: f.body,
        headers: f.headers,
      }).then(
        (res) => res.status,
        () => 0,
      );
      if (status !== 200) continue;
      acknowledged.push(from);
      onOk(acknowledged.length);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return acknowledged;
}

/** The addresses among `ips` that `box`'s authd does not answer OK as the user `users` names for each. */
async function unknownOn(
  box: Box,
  ips: readonly string[],
  users: ReadonlyMap<string, string>,
): Promise<string[]> {
  const answers = await box.lookup(ips);
  return ips.filter((ip, i) => answers[i]?.result !== 'OK' || answers[i]?.user !== users.get(ip));
}

describe('two proxies on one PostgreSQL', () => {
  it("a login through A's API identifies the client on B's Squid within 1 s", async () => {
    await api(a, 'logout');
    expect(await browse(b)).toBe(403);
    const login = await api(a, 'login', 'alice');
    expect(login.status).toBe(200);
    expect(JSON.parse(login.body)).toEqual({ ok: true, username: 'alice', ip: client() });
    const ms = await squidAnswers(b, 200);
    expect(ms).toBeLessThanOrEqual(1000);
    await loggedAs(b, 'alice');
  });

  it("a logout through B's API denies the client on A's Squid within 1 s", async () => {
    expect((await api(a, 'login', 'bob')).status).toBe(200);
    await squidAnswers(a, 200);
    const logout = await api(b, 'logout');
    expect(logout.status).toBe(200);
    expect(JSON.parse(logout.body)).toEqual({ ok: true, ip: client(), ended: true });
    const ms = await squidAnswers(a, 403);
    expect(ms).toBeLessThanOrEqual(1000);
  });

  it('a splash-page agreement on A is honoured on B, under the portal settings saved on A', async () => {
    await api(a, 'logout');
    const policy = join(scratch, 'policy.txt');
    writeFileSync(policy, 'Be kind to the network.\n');
    const splashOfB = async () => (await site.curl([`${b.webUrl}portal/`])).stdout;
    expect(await splashOfB()).not.toContain('Accept and continue');
    await a.lab.cli('device-group', 'add', '--name', 'Lab', '--cidr', `${client()}/32`);
    await a.lab.cli('portal', 'set', '--mode', 'agreement', '--policy-file', policy);

    // In force on B: its CLI reads them, and its splash page asks this client to accept the policy.
    expect(JSON.parse((await b.lab.cli('portal', 'show')).stdout)).toMatchObject({ mode: 'agreement' });
    await until(
      async () => {
        const stdout = await splashOfB();
        return stdout.includes('Accept and continue') && stdout.includes('<p>Be kind to the network.</p>');
      },
      2000,
      "B's splash page does not show the agreement",
    );

    // Accepted on A's splash page, as a browser does: the page (its cookie and token), then the form.
    const jar = join(scratch, 'cookies');
    const shown = await site.curl(['-c', jar, `${a.webUrl}portal/`]);
    const csrf = /<input type="hidden" name="csrf" value="([^"]*)"/.exec(shown.stdout)?.[1];
    expect(csrf).toBeDefined();
    const accepted = await site.curl(
      [
        '-b',
        jar,
        '-o',
        '/dev/null',
        '-w',
        '%{http_code} %{redirect_url}',
        '--data-binary',
        '@-',
        `${a.webUrl}portal/`,
      ],
      new URLSearchParams({ csrf: csrf ?? '' }).toString(),
    );
    expect(accepted.stdout).toBe(`303 ${a.webUrl}portal/done`);

    const ms = await squidAnswers(b, 200);
    expect(ms).toBeLessThanOrEqual(1000);
    await loggedAs(b, 'agreement:Lab');
    expect(await b.lookup([client()])).toEqual([{ result: 'OK', user: 'agreement:Lab' }]);
    await a.lab.cli('portal', 'set', '--mode', 'off');
  });

  it('5,000 logins in a burst on A are all answered OK on B: counts equal', async () => {
    const ips = addresses(100, 5000);
    const users = new Map(ips.map((ip, i) => [ip, `burst${i}`]));
    const acknowledged = await burst(a, ips, 'burst');
    expect(acknowledged.length).toBe(5000);
    let missing: string[] = ips;
    await until(
      async () => (missing = await unknownOn(b, ips, users)).length === 0,
      5000,
      `B does not know ${missing.length} of the 5,000`,
    ).catch(() => undefined);
    expect(missing).toEqual([]);
  });

  it("kill -9 of A's serve and authd mid-burst: every login A acknowledged is answered OK on B", async () => {
    const ips = addresses(150, 5000);
    const users = new Map(ips.map((ip, i) => [ip, `killed${i}`]));
    let killing: Promise<void> | undefined;
    const acknowledged = await burst(a, ips, 'killed', (count) => {
      if (count === 1000) killing = a.killAll();
    });
    await killing;
    // Mid-burst: some acknowledged, not all.
    expect(acknowledged.length).toBeGreaterThanOrEqual(1000);
    expect(acknowledged.length).toBeLessThan(ips.length);
    expect(a.authdPid()).toBeUndefined();
    let missing: string[] = acknowledged;
    await until(
      async () => (missing = await unknownOn(b, acknowledged, users)).length === 0,
      3000,
      'B lacks acknowledged logins',
    ).catch(() => undefined);
    expect(missing).toEqual([]);

    // A again, as its service manager would start it: what follows needs it.
    await a.startServe();
    expect((await api(a, 'login', 'after-restart')).status).toBe(200);
  });

  it("PostgreSQL stopped: B keeps identifying the known client and its API answers 503; back, A's login is on B within 2 s", async () => {
    expect((await api(a, 'login', 'carol')).status).toBe(200);
    await squidAnswers(b, 200);
    await site.pg.stop();
    let refused: ApiAnswer | undefined;
    const statuses: number[] = [];
    try {
      // Long enough for B's client to have noticed and tried to reconnect (at most a second apart).
      const deadline = performance.now() + 2000;
      while (performance.now() < deadline) statuses.push(await browse(b));
      refused = await api(b, 'login', 'dave');
    } finally {
      await site.pg.start();
    }
    const back = performance.now();
    expect(statuses.length).toBeGreaterThan(5);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(refused?.status).toBe(503);
    expect(refused?.headers).toMatch(/^retry-after: \d+\r?$/im);
    // How stale B's answers are is said while it lasts.
    expect(b.authdLog()).toMatch(
      /PostgreSQL unreachable .*: answering from memory, last caught up \d+ ms ago/,
    );

    // A's own client reconnects too: its login API answers 503 until then.
    let login = await api(a, 'login', 'erin');
    while (login.status === 503 && performance.now() - back < 5000) {
      await sleep(50);
      login = await api(a, 'login', 'erin');
    }
    expect(login.status).toBe(200);
    await until(
      async () => (await b.lookup([client()]))[0]?.user === 'erin',
      5000,
      "B's authd never saw erin",
    );
    expect(performance.now() - back).toBeLessThanOrEqual(2000);
    await loggedAs(b, 'carol');
  });

  it("a restart of B's authd: the new process answers at once from a full load, no lookup denied or BH", async () => {
    const clients = await loginClients(a.lab, 20, 10);
    const users = new Map(clients.map((ip, i) => [ip, `user${i}`]));
    await until(async () => (await unknownOn(b, clients, users)).length === 0, 5000, 'B lacks the clients');
    const sessions = Number(site.pg.psql('SELECT count(*) FROM sessions', 'doorman').trim());

    // The successor loads everything before it says ready and takes the sockets over.
    const before = b.authdPid();
    let restarted = '';
    const seen = await underLoad(
      { squidPort: b.lab.squidPort, url: page(), addresses: clients },
      async () => {
        restarted = (await b.lab.cli('authd', 'restart')).stdout;
      },
    );
    const after = b.authdPid();
    expect(restarted).toBe(`authd restarted (pid ${before} -> ${after})\n`);
    // Its first lookups, on a connection of their own: every client known.
    expect(await unknownOn(b, clients, users)).toEqual([]);
    expect(seen).toMatchObject({ denied: 0 });
    expect(seen.requests).toBeGreaterThan(clients.length);
    expect(b.lab.cacheLog().join('\n')).not.toMatch(/\bBH\b/);
    const loaded = new RegExp(`doorman-authd\\[${after}\\]: sessions loaded from PostgreSQL: (\\d+)`);
    expect(Number(loaded.exec(b.authdLog())?.[1])).toBe(sessions);
  });

  it("a cold start of B's authd (stopped, then started by B's serve) loads before it takes a connection: no BH", async () => {
    const clients = await loginClients(a.lab, 20, 40);
    const users = new Map(clients.map((ip, i) => [ip, `user${i}`]));
    await until(async () => (await unknownOn(b, clients, users)).length === 0, 5000, 'B lacks the clients');
    // 200,000 more sessions: the load takes long enough that a socket taking connections before it ends
    // would answer BH to the load's requests.
    site.pg.psql(
      `WITH c AS (UPDATE changes SET last = last + 1 WHERE tab = 'sessions' RETURNING last)
       INSERT INTO sessions (key_kind, key, username, source, created_at, last_seen, change)
       SELECT 'ip', '172.' || (16 + i / 65536) || '.' || (i / 256 % 256) || '.' || (i % 256), 'filler', 'api',
         0, 0, c.last FROM generate_series(0, 199999) AS i, c`,
      'doorman',
    );
    const before = b.authdPid();
    const seen = await underLoad(
      { squidPort: b.lab.squidPort, url: page(), addresses: clients },
      async () => {
        await b.lab.cli('authd', 'stop');
        await b.lab.cli('authd', 'status', '--wait', '30');
      },
    );
    expect(b.authdPid()).not.toBe(before);
    expect(seen).toMatchObject({ denied: 0 });
    expect(b.lab.cacheLog().join('\n')).not.toMatch(/\bBH\b/);
  });
});
