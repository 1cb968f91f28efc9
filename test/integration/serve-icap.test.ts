import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { http } from '../harness/http.ts';
import { ROOT, requireSystem } from '../harness/lab.ts';
import { freePort, start, waitForPort, type Started } from '../harness/processes.ts';
import { run } from '../harness/run.ts';

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

const doorman = (...args: string[]) => run(DOORMAN, [...args, '--config', configFile]);

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
const reqmod = (url: string, client: string) =>
  cIcapClient('-req', url, '-x', `X-Client-IP: ${client}`, '-v');

beforeAll(async () => {
  requireSystem();
  dir = mkdtempSync(join(tmpdir(), 'doorman-serve-icap-'));
  chmodSync(dir, 0o755); // the service user reads the config and owns stateDir in here
  [webPort, icapPort] = [await freePort(), await freePort()];
  configFile = join(dir, 'doorman.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      baseUrl: `http://127.0.0.1:${webPort}/`,
      listen: [{ host: '127.0.0.1', port: webPort }],
      stateDir: join(dir, 'state'),
      // Never bound by serve: only squid-conf uses it. Set, it turns the portal (and so the ICAP service) on.
      squid: { intercept: { httpPort: 3129 } },
      icap: { port: icapPort },
    }),
    { mode: 0o644 },
  );
  serve = start(DOORMAN, ['serve', '--config', configFile]);
  await waitForPort('127.0.0.1', webPort, 10_000, serve.child);
  await waitForPort('127.0.0.1', icapPort, 10_000, serve.child);
});

afterAll(async () => {
  await serve?.stop();
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
      `Location: http://127.0.0.1:${webPort}/portal/?url=${encodeURIComponent('http://example.test/a/page?x=1')}`,
    );
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
