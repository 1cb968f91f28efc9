import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../lib/clock.ts';
import { PortalUrlSigner } from '../../lib/security/portal-url-signature.ts';
import { readProxyKey } from '../../lib/security/proxy-key.ts';
import { applyDirectory } from '../harness/apply-directory.ts';
import { http } from '../harness/http.ts';
import { writePortalConfig } from '../harness/portal-config.ts';
import { ROOT, requireSystem } from '../harness/lab.ts';
import { freePort, start, waitForPort, type Started } from '../harness/processes.ts';
import { run } from '../harness/run.ts';
import { startSlapd, type Slapd } from '../harness/slapd.ts';

/**
 * `doorman serve` with the captive portal configured (squid.intercept.httpPort set) runs the ICAP service on
 * icap.host:icap.port over its own session DB, asked by c-icap-client (Debian's c-icap, the reference client):
 * the ISTag follows the portal settings saved by `doorman portal set` in another process, and the decision
 * follows the mode and the sessions made by the login API.
 */
const DOORMAN = join(ROOT, 'bin', 'doorman');
/** Has no session. */
const STRANGER = '10.9.8.7';
/** Logs in through the API (from this loopback address) in its test. */
const LOGS_IN = '127.0.0.61';

let dir: string;
let configFile: string;
let webPort: number;
let icapPort: number;
let serve: Started | undefined;
/** The directory the authentication mode needs applied (portal set refuses the mode without one). */
let slapd: Slapd;

const doorman = (...args: string[]) => run(DOORMAN, [...args, '--config', configFile]);
/** Save & apply the test directory in the DB of the config `config`. */
const applyDirectoryTo = (config: string) =>
  applyDirectory((args, options) => run(DOORMAN, [...args, '--config', config], options), slapd);

async function cIcapClient(...args: string[]): Promise<string> {
  const { stdout, stderr } = await run('c-icap-client', [
    '-i',
    '127.0.0.1',
    '-p',
    String(icapPort),
    '-s',
    'reqmod',
    ...args,
  ]);
  return stdout + stderr;
}

const istag = async () => /ISTag: "([^"]+)"/.exec(await cIcapClient('-v'))?.[1];
/** The key serve made in `stateDir`, as Squid sends it to ICAP (adaptation_meta, see the generated include). */
const keyHeader = (stateDir: string) => `X-Doorman-Key: ${readProxyKey(join(stateDir, 'proxy-key'))}`;
/** A REQMOD as Squid sends it: the client's address, and the key that proves Squid wrote it. */
const reqmod = (url: string, client: string) =>
  cIcapClient('-req', url, '-x', `X-Client-IP: ${client}`, '-x', keyHeader(join(dir, 'state')), '-v');

/**
 * The status line of the ICAP answer to `message` (sent raw: c-icap-client prints no status line for a 500).
 * The connection is closed after the answer's head.
 */
async function icapStatusLine(port: number, message: string): Promise<string> {
  const { status, socket } = await answeredConnection(port, message);
  socket.destroy();
  return status;
}

/** A connection whose first answer (to `message`) has come and which stays open; resolves to its status line. */
function answeredConnection(port: number, message: string): Promise<{ status: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, () => socket.write(message, 'latin1'));
    let got = '';
    socket.setEncoding('latin1');
    socket.on('data', (data: string) => {
      got += data;
      if (got.endsWith('\r\n\r\n')) resolve({ status: got.slice(0, got.indexOf('\r\n')), socket });
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`closed without an answer; got ${JSON.stringify(got)}`)));
  });
}

/** Asks until the answer is 204 (the DB opened: mode off by default), at most ~10 s. */
async function untilServing(port: number): Promise<string> {
  let answer = '';
  for (let i = 0; i < 100 && answer !== 'ICAP/1.0 204 No Content'; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 100));
    answer = await icapStatusLine(port, rawReqmod(port, STRANGER));
  }
  return answer;
}

function rawOptions(port: number): string {
  return `OPTIONS icap://127.0.0.1:${port}/reqmod ICAP/1.0\r\nHost: 127.0.0.1:${port}\r\n\r\n`;
}

/** A REQMOD for http://example.test/ that names `client` in X-Client-IP, with `extra` ICAP header lines. */
function rawReqmod(port: number, client: string, extra = ''): string {
  const http = 'GET http://example.test/ HTTP/1.1\r\nHost: example.test\r\nAccept: text/html\r\n\r\n';
  return (
    `REQMOD icap://127.0.0.1:${port}/reqmod ICAP/1.0\r\nHost: 127.0.0.1:${port}\r\n` +
    `Encapsulated: req-hdr=0, null-body=${http.length}\r\nAllow: 204\r\nX-Client-IP: ${client}\r\n` +
    `${extra}\r\n${http}`
  );
}

/** Resolves once `done()` holds; fails after `ms`. */
async function until(done: () => boolean, ms = 10_000): Promise<void> {
  for (const end = Date.now() + ms; !done(); await new Promise((r) => setTimeout(r, 50)))
    if (Date.now() > end) throw new Error(`not so after ${ms} ms: ${String(done)}`);
}

/** The whole answer to one raw request, read until the server closes (Connection: close). */
function rawAnswer(port: number, message: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, () => socket.write(message, 'latin1'));
    let got = '';
    socket.setEncoding('latin1');
    socket.on('data', (data: string) => (got += data));
    socket.on('error', reject);
    socket.on('close', () => resolve(got));
  });
}

/**
 * Whether the 302 in an ICAP answer sends `client` to the splash page with `url` signed under the key serve
 * keeps in `stateDir` (the proxy key): what the splash page checks before it goes on to `url`.
 */
function signedLocation(answer: string, url: string, client: string, stateDir: string) {
  const location = /Location: (\S+)/.exec(answer)?.[1] ?? '';
  const query = new URL(location).searchParams;
  const signer = new PortalUrlSigner(readProxyKey(join(stateDir, 'proxy-key')), systemClock);
  return { url: query.get('url'), check: signer.verify(url, client, query.get('sig') ?? '') };
}

/** A config for serve with the portal on, in its own directory under `dir`; `extra` overrides fields. */
const portalConfig = (name: string, web: number, icap: number, extra: object = {}): string =>
  writePortalConfig(join(dir, name), web, icap, extra);

beforeAll(async () => {
  requireSystem();
  dir = mkdtempSync(join(tmpdir(), 'doorman-serve-icap-'));
  chmodSync(dir, 0o755); // the service user reads the config and owns stateDir in here
  [webPort, icapPort] = [await freePort(), await freePort()];
  // squid.intercept.httpPort is never bound by serve (only squid-conf uses it): set, it turns the portal on.
  configFile = writePortalConfig(dir, webPort, icapPort);
  serve = start(DOORMAN, ['serve', '--config', configFile]);
  await waitForPort('127.0.0.1', webPort, 10_000, serve.child);
  await waitForPort('127.0.0.1', icapPort, 10_000, serve.child);
  // Made by serve once it has given up root (just after it listens).
  await until(() => existsSync(join(dir, 'state', 'proxy-key')));
  slapd = await startSlapd();
  await applyDirectoryTo(configFile);
}, 30_000);

afterAll(async () => {
  await serve?.stop();
  await slapd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('doorman serve with squid.intercept.httpPort set', () => {
  it('mode off (the default): a client without a session is let through (204)', async () => {
    expect(await reqmod('http://example.test/page', STRANGER)).toContain('ICAP/1.0 204 No Content');
  });

  it('answers OPTIONS with an ISTag that changes once the portal settings are saved', async () => {
    const before = await istag();
    expect(before).toMatch(/^dm-[A-Za-z0-9_-]{8}-\d+$/);
    expect(await istag()).toBe(before);
    await doorman('portal', 'set', '--mode', 'authentication');
    const after = await istag();
    expect(after).toMatch(/^dm-[A-Za-z0-9_-]{8}-\d+$/);
    expect(after).not.toBe(before);
  });

  it('mode authentication: a client without a session is sent to {baseUrl}portal/?url=… (302)', async () => {
    const out = await reqmod('http://example.test/a/page?x=1', STRANGER);
    expect(out).toContain('ICAP/1.0 200 OK');
    expect(out).toContain('HTTP/1.1 302 Found');
    expect(out).toContain(
      `Location: http://127.0.0.1:${webPort}/portal/?url=${encodeURIComponent('http://example.test/a/page?x=1')}&sig=`,
    );
    expect(signedLocation(out, 'http://example.test/a/page?x=1', STRANGER, join(dir, 'state'))).toEqual({
      url: 'http://example.test/a/page?x=1',
      check: { ok: true },
    });
  });

  it('mode authentication: a REQMOD without Squid’s key (a forged X-Client-IP) gets the portal with no url= to sign', async () => {
    // Anyone who can reach the ICAP port may name any client: without the key, nothing is signed for it.
    const forged = await rawAnswer(
      icapPort,
      rawReqmod(icapPort, STRANGER, 'X-Doorman-Key: not-the-key\r\nConnection: close\r\n'),
    );
    expect(forged).toContain('HTTP/1.1 302 Found');
    expect(forged).toContain(`Location: http://127.0.0.1:${webPort}/portal/\r\n`);
    expect(forged).not.toContain('sig=');
    const none = await rawAnswer(icapPort, rawReqmod(icapPort, STRANGER, 'Connection: close\r\n'));
    expect(none).toContain(`Location: http://127.0.0.1:${webPort}/portal/\r\n`);
    // Logged once (at most once a minute), never with a key.
    await until(() => (serve?.stderr() ?? '').includes("without Doorman's key"));
    expect(serve?.stderr().split("without Doorman's key").length).toBe(2);
    expect(serve?.stderr()).toContain('run `doorman squid-conf` again');
    expect(serve?.stderr()).not.toContain(readProxyKey(join(dir, 'state', 'proxy-key')));
  });

  it('mode authentication: a client with a session from the login API is let through (204)', async () => {
    const key = (await doorman('api-key', 'create', '--name', 'icap-test')).stdout.trim();
    const login = await http(`http://127.0.0.1:${webPort}/api/login/`, {
      method: 'POST',
      from: LOGS_IN,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `api_key=${encodeURIComponent(key)}&username=alice`,
    });
    expect(login.status).toBe(200);
    expect(await reqmod('http://example.test/page', LOGS_IN)).toContain('ICAP/1.0 204 No Content');
    expect(await reqmod('http://example.test/page', STRANGER)).toContain('HTTP/1.1 302 Found');
  });

  it('mode off again: the stranger is let through once more', async () => {
    await doorman('portal', 'set', '--mode', 'off');
    expect(await reqmod('http://example.test/page', STRANGER)).toContain('ICAP/1.0 204 No Content');
  });

  it('closes the ICAP service with the rest on SIGTERM, exits 0, and logged where it listened', async () => {
    const child = serve?.child;
    if (child === undefined) throw new Error('serve did not start');
    // 'close', not 'exit': stderr is read to its end (its log lines leave in batches).
    const closed = new Promise<number | null>((resolve) => child.once('close', resolve));
    child.kill('SIGTERM');
    expect(await closed).toBe(0);
    expect(serve?.stderr()).toContain(`icap service on 127.0.0.1:${icapPort}`);
    await expect(waitForPort('127.0.0.1', icapPort, 200)).rejects.toThrow(/nothing listens/);
  });
});

describe('doorman serve: the ICAP service when things go wrong', () => {
  let other: Started | undefined;
  let blocker: Server | undefined;
  afterEach(async () => {
    await other?.stop();
    other = undefined;
    await new Promise((resolve) => (blocker === undefined ? resolve(undefined) : blocker.close(resolve)));
    blocker = undefined;
  });

  it('answers 500 (OPTIONS and REQMOD) while the session DB cannot be opened, and serves once it can', async () => {
    const [web, icap] = [await freePort(), await freePort()];
    // stateDir under a root-owned 0700 directory: the service user (proxy) cannot reach it.
    const locked = join(dir, 'unreachable', 'locked');
    mkdirSync(locked, { recursive: true, mode: 0o700 });
    chmodSync(locked, 0o700);
    const config = portalConfig('unreachable', web, icap, { stateDir: join(locked, 'state') });
    other = start(DOORMAN, ['serve', '--config', config]);
    await waitForPort('127.0.0.1', icap, 10_000, other.child);
    expect(await icapStatusLine(icap, rawOptions(icap))).toBe('ICAP/1.0 500 Server Error');
    // Never a 204: with bypass=0 Squid shows its error page, the client does not get the web unidentified.
    expect(await icapStatusLine(icap, rawReqmod(icap, STRANGER))).toBe('ICAP/1.0 500 Server Error');
    expect(other.child.exitCode).toBeNull();

    // The operator fixes the directory: a later request opens the DB (mode off by default: 204).
    chmodSync(locked, 0o755);
    let answer = await icapStatusLine(icap, rawReqmod(icap, STRANGER));
    for (let i = 0; i < 100 && answer !== 'ICAP/1.0 204 No Content'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      answer = await icapStatusLine(icap, rawReqmod(icap, STRANGER));
    }
    expect(answer).toBe('ICAP/1.0 204 No Content');
    expect(other.stderr()).toMatch(/icap: .*the session DB cannot be opened: stateDir: /);
  });

  it('holds Max-Connections across its ICAP threads: with 2 threads and 3 allowed, the fourth is refused 503', async () => {
    const [web, icap] = [await freePort(), await freePort()];
    const config = portalConfig('threads', web, icap, {
      icap: { port: icap, workers: 2, maxConnections: 3, maxConnectionsPerAddress: 3 },
    });
    other = start(DOORMAN, ['serve', '--config', config]);
    await waitForPort('127.0.0.1', icap, 10_000, other.child);
    const open: Socket[] = [];
    try {
      // Three connections answered and kept open. A 500 (the DB not open yet) or a 503 (connections closed
      // a moment ago not yet counted out) is let go and tried again.
      for (let i = 0; i < 100 && open.length < 3; i++) {
        const { status, socket } = await answeredConnection(icap, rawReqmod(icap, STRANGER));
        if (status === 'ICAP/1.0 204 No Content') open.push(socket);
        else {
          socket.destroy();
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      expect(open.length).toBe(3);
      // Each thread alone would take 3: the kernel spreads connections over both, so the 4th is refused
      // because the threads count together.
      expect(await icapStatusLine(icap, rawOptions(icap))).toBe('ICAP/1.0 503 Service Overloaded');
    } finally {
      for (const socket of open) socket.destroy();
    }
    expect(other.stderr()).toContain(`icap service on 127.0.0.1:${icap} (2 threads)`);
  });

  it("counts every thread's ICAP answers in serve's one scrape (summed), with the answer's kind", async () => {
    const [web, icap, metrics] = [await freePort(), await freePort(), await freePort()];
    const config = portalConfig('metrics-threads', web, icap, {
      icap: { port: icap, workers: 2 },
      metrics: { listen: { host: '127.0.0.1', port: metrics } },
    });
    other = start(DOORMAN, ['serve', '--config', config]);
    await waitForPort('127.0.0.1', icap, 10_000, other.child);
    expect(await untilServing(icap)).toBe('ICAP/1.0 204 No Content');
    const scrape = async () => (await http(`http://127.0.0.1:${metrics}/metrics`)).body;
    const sample = (text: string, answer: string) =>
      Number(new RegExp(`^doorman_icap_answers_total\\{answer="${answer}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
    const before = await scrape();
    // New connections, which the kernel spreads over both threads.
    for (let i = 0; i < 10; i++)
      expect(await icapStatusLine(icap, rawReqmod(icap, STRANGER))).toBe('ICAP/1.0 204 No Content');
    for (let i = 0; i < 3; i++) expect(await icapStatusLine(icap, rawOptions(icap))).toBe('ICAP/1.0 200 OK');
    const after = await scrape();
    expect(sample(after, '204') - sample(before, '204')).toBe(10);
    expect(sample(after, 'options') - sample(before, 'options')).toBe(3);
    expect(after).toMatch(/^doorman_icap_duration_seconds_count\{answer="204"\} \d+$/m);
  });

  it('ICAP threads sign the original URL with the key the splash page checks (the proxy key in stateDir)', async () => {
    const [web, icap] = [await freePort(), await freePort()];
    const config = portalConfig('signing-threads', web, icap, { icap: { port: icap, workers: 2 } });
    await applyDirectoryTo(config);
    await run(DOORMAN, ['portal', 'set', '--mode', 'authentication', '--config', config]);
    other = start(DOORMAN, ['serve', '--config', config]);
    await waitForPort('127.0.0.1', icap, 10_000, other.child);
    await until(() => existsSync(join(dir, 'signing-threads', 'state', 'proxy-key')));
    // Until the threads have opened the DB (a 500 before that).
    let answer = '';
    for (let i = 0; i < 100 && !answer.includes('HTTP/1.1 302'); i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      const asked = await run('c-icap-client', [
        ...['-i', '127.0.0.1', '-p', String(icap), '-s', 'reqmod'],
        ...['-req', 'http://example.test/', '-x', `X-Client-IP: ${STRANGER}`],
        ...['-x', keyHeader(join(dir, 'signing-threads', 'state')), '-v'],
      ]);
      answer = asked.stdout + asked.stderr;
    }
    expect(answer).toContain('HTTP/1.1 302');
    expect(
      signedLocation(answer, 'http://example.test/', STRANGER, join(dir, 'signing-threads', 'state')),
    ).toEqual({
      url: 'http://example.test/',
      check: { ok: true },
    });
  });

  it("icap.workers 0: the ICAP service runs in serve's own thread", async () => {
    const [web, icap] = [await freePort(), await freePort()];
    const config = portalConfig('own-thread', web, icap, { icap: { port: icap, workers: 0 } });
    other = start(DOORMAN, ['serve', '--config', config]);
    await waitForPort('127.0.0.1', icap, 10_000, other.child);
    expect(await untilServing(icap)).toBe('ICAP/1.0 204 No Content');
    expect(other.stderr()).toMatch(new RegExp(`icap service on 127\\.0\\.0\\.1:${icap}\\n`));
  });

  it('a second serve on the same ICAP port exits 1: its threads do not share the port with the first', async () => {
    const [web, icap, web2] = [await freePort(), await freePort(), await freePort()];
    // Two threads each: both would ask for SO_REUSEPORT, which alone would let the second share the port.
    const threads = { icap: { port: icap, workers: 2 } };
    other = start(DOORMAN, ['serve', '--config', portalConfig('first', web, icap, threads)]);
    await waitForPort('127.0.0.1', icap, 10_000, other.child);
    const result = await run(DOORMAN, ['serve', '--config', portalConfig('second', web2, icap, threads)], {
      allowFailure: true,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`cannot listen on 127.0.0.1:${icap} (icap): `);
    expect(result.stderr).toMatch(/EADDRINUSE|address already in use/i);
    expect(await untilServing(icap)).toBe('ICAP/1.0 204 No Content');
  });

  it('exits 1 saying which address it cannot listen on when the ICAP port is taken, the web port freed', async () => {
    const [web, icap] = [await freePort(), await freePort()];
    blocker = createServer();
    await new Promise<void>((resolve) => blocker?.listen(icap, '127.0.0.1', resolve));
    const config = portalConfig('taken', web, icap);
    const result = await run(DOORMAN, ['serve', '--config', config], { allowFailure: true });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`cannot listen on 127.0.0.1:${icap} (icap): `);
    expect(result.stderr).toMatch(/EADDRINUSE|address already in use/i);
    // The web app's port, bound first, was let go.
    await expect(waitForPort('127.0.0.1', web, 200)).rejects.toThrow(/nothing listens/);
  });
});
