import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { http } from '../harness/http.ts';
import { writePortalConfig } from '../harness/portal-config.ts';
import { ROOT, requireSystem } from '../harness/lab.ts';
import { freePort, start, terminate, waitForPort, type Started } from '../harness/processes.ts';

/**
 * A flood of ICAP connections against a real `doorman serve` whose descriptors are few (RLIMIT_NOFILE 400,
 * set by prlimit, which then runs serve in its own process): refused connections are closed whether or not
 * their clients hang up, so serve's descriptors come back down and the web app goes on answering; one
 * address holds at most its share of the ICAP places, so a client at another address (Squid's) is still
 * answered; a request trickled in byte by byte is cut at icap.requestTimeoutSeconds.
 */
const DOORMAN = join(ROOT, 'bin', 'doorman');
const NOFILE = 400;
/** Far more than serve may open: every refused connection held would run it out of descriptors. */
const FLOOD = 2000;
const FLOODER = '127.0.0.2';
const SQUID = '127.0.0.1';
/** Defaults: maxConnections 100, so 50 per address (and advertised); 16 refused ones may linger. */
const PER_ADDRESS = 50;
const LINGERING = 16;

let dir: string;
let webPort: number;
let icapPort: number;
let serve: Started | undefined;

const descriptors = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;

/** Polls until `done()` holds, at most `ms`; then one last look decides. */
async function eventually(done: () => boolean, ms = 10_000): Promise<boolean> {
  for (let waited = 0; waited < ms && !done(); waited += 50) await new Promise((r) => setTimeout(r, 50));
  return done();
}

function rawReqmod(client: string, body?: string): string {
  const http = `${body === undefined ? 'GET' : 'POST'} http://example.test/ HTTP/1.1\r\nHost: example.test\r\n\r\n`;
  const encapsulated = body === undefined ? `null-body=${http.length}` : `req-body=${http.length}`;
  return (
    `REQMOD icap://127.0.0.1:${icapPort}/reqmod ICAP/1.0\r\nHost: 127.0.0.1:${icapPort}\r\n` +
    `Encapsulated: req-hdr=0, ${encapsulated}\r\nAllow: 204\r\nX-Client-IP: ${client}\r\n\r\n${http}` +
    (body ?? '')
  );
}

/** A connection from `from` that never hangs up by itself (allowHalfOpen) and keeps what it receives. */
function hold(from: string): Promise<{ socket: Socket; received: () => string }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: icapPort, localAddress: from, allowHalfOpen: true });
    let got = '';
    socket.setEncoding('latin1');
    socket.on('data', (data: string) => (got += data));
    socket.once('connect', () => {
      socket.off('error', reject);
      socket.on('error', () => {});
      resolve({ socket, received: () => got });
    });
    socket.once('error', reject);
  });
}

/** The status line of the answer to one REQMOD from `client`, on a fresh connection. */
function icapStatus(client: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: icapPort, localAddress: client }, () =>
      socket.write(rawReqmod(client), 'latin1'),
    );
    let got = '';
    socket.setEncoding('latin1');
    socket.on('data', (data: string) => {
      got += data;
      if (got.endsWith('\r\n\r\n')) {
        socket.destroy();
        resolve(got.slice(0, got.indexOf('\r\n')));
      }
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`closed without an answer; got ${JSON.stringify(got)}`)));
  });
}

beforeAll(async () => {
  requireSystem();
  dir = mkdtempSync(join(tmpdir(), 'doorman-icap-flood-'));
  [webPort, icapPort] = [await freePort(), await freePort()];
  const configFile = writePortalConfig(dir, webPort, icapPort, {
    icap: { port: icapPort, requestTimeoutSeconds: 2 },
  });
  // prlimit sets the limit on itself and then becomes serve (exec): the PID is serve's.
  serve = start('prlimit', [`--nofile=${NOFILE}`, '--', DOORMAN, 'serve', '--config', configFile]);
  await waitForPort('127.0.0.1', webPort, 10_000, serve.child);
  await waitForPort('127.0.0.1', icapPort, 10_000, serve.child);
  // Serving once the DB is open (the default mode, off, answers 204).
  let status = '';
  for (let i = 0; i < 100 && status !== 'ICAP/1.0 204 No Content'; i++) {
    if (i > 0) await new Promise((r) => setTimeout(r, 100));
    status = await icapStatus(SQUID);
  }
  expect(status).toBe('ICAP/1.0 204 No Content');
});

afterAll(async () => {
  if (serve !== undefined) await terminate(serve);
  rmSync(dir, { recursive: true, force: true });
});

describe('doorman serve under a flood of ICAP connections', () => {
  it(`closes refused connections: ${FLOOD} held open by one address leave its descriptors and its web app`, async () => {
    const pid = serve?.child.pid;
    if (pid === undefined) throw new Error('serve did not start');
    // prlimit became serve (exec), so the descriptors counted below are serve's, under the lowered limit.
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    expect(argv.some((arg) => arg.endsWith('/cli/main.ts'))).toBe(true);
    expect(readFileSync(`/proc/${pid}/limits`, 'utf8')).toMatch(
      new RegExp(`Max open files +${NOFILE} +${NOFILE} `),
    );
    const baseline = descriptors(pid);
    const flood: { socket: Socket; received: () => string }[] = [];
    try {
      // In batches, so the listen backlog is not what refuses them.
      for (let i = 0; i < FLOOD; i += 100)
        flood.push(...(await Promise.all(Array.from({ length: 100 }, () => hold(FLOODER)))));
      // Each refused one has had its 503 (the admitted ones got nothing: they sent nothing).
      const refused = () => flood.filter((c) => c.received().startsWith('ICAP/1.0 503 ')).length;
      expect(await eventually(() => refused() === FLOOD - PER_ADDRESS)).toBe(true);
      // All of them still held by their clients: serve holds only the admitted ones and a few lingering.
      expect(await eventually(() => descriptors(pid) <= baseline + PER_ADDRESS + LINGERING)).toBe(true);
      // The web app accepts and answers, and Squid's address still gets ICAP answers.
      const page = await http(`http://127.0.0.1:${webPort}/api/login/`, { from: '127.0.0.3' });
      expect(page.status).toBeGreaterThanOrEqual(200);
      expect(await icapStatus(SQUID)).toBe('ICAP/1.0 204 No Content');
      // Refusals are logged now and then, with a count, not once each.
      const lines = (serve?.stderr() ?? '').split('\n').filter((l) => l.includes(' refused: '));
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.length).toBeLessThan(100);
      expect(lines.join('\n')).toContain(`refused: ${PER_ADDRESS} open from its address`);
    } finally {
      for (const c of flood) c.socket.destroy();
    }
    // The admitted ones close with their clients.
    expect(await eventually(() => descriptors(pid) <= baseline)).toBe(true);
  });

  it('cuts a body trickled in byte by byte at icap.requestTimeoutSeconds (2 s here) with 408', async () => {
    const c = await hold('127.0.0.4');
    const body = `64\r\n${'x'.repeat(100)}\r\n0\r\n\r\n`;
    const message = rawReqmod('127.0.0.4', body);
    // The heads at once, then the body one byte every 100 ms: 11 s in all, each byte well inside any idle
    // timeout, so only a deadline for the whole request stops it.
    let sent = message.length - body.length;
    c.socket.write(message.slice(0, sent));
    while (sent < message.length && !c.received().includes('\r\n\r\n')) {
      c.socket.write(message.slice(sent, sent + 1));
      sent++;
      await new Promise((r) => setTimeout(r, 100));
    }
    c.socket.destroy();
    expect(c.received()).toMatch(/^ICAP\/1\.0 408 Request Timeout\r\n/);
    expect(sent).toBeLessThan(message.length);
  });
});
