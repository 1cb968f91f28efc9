import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browser, form, http } from '../harness/http.ts';
import { freePort, type Started, terminate, waitForPort } from '../harness/processes.ts';
import { run } from '../harness/run.ts';
import { startSambaAd, type SambaAd } from '../harness/samba-ad.ts';
import { startSeamlessMember, type SeamlessMember } from '../harness/seamless-member.ts';
import { createServer, type Server } from 'node:http';
import { GSS_NTLMSSP_MECH_CONFIG } from '../harness/gss-ntlmssp.ts';
import { tokenCommand } from '../harness/kdc.ts';

/**
 * Seamless authentication end to end, through a real Squid on the generated include: the proxy joined to a
 * Samba AD domain by `doorman seamless enable` (password on stdin), `doorman serve` with authd behind the shims,
 * and real clients: Kerberos (`curl --proxy-negotiate` with alice's ticket), raw NTLM (`curl --proxy-ntlm`),
 * NTLM inside SPNEGO (curl's GSSAPI with gss-ntlmssp selected by GSS_MECH_CONFIG and NTLM_USER_FILE, no
 * ticket) and Basic, each passing as alice; wrong passwords 407; carol, outside squid.groups.allow, 403; a client
 * with an API session never challenged.
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
let apiKey: string;
const PASSWORD = 'Passw0rd!';
const DOORMAN = resolve(import.meta.dirname, '..', '..', 'bin', 'doorman');

beforeAll(async () => {
  [doormanPort, squidPort, originPort] = [await freePort(), await freePort(), await freePort()];
  origin = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'text/plain' }).end('origin\n');
  });
  await new Promise<void>((r) => origin.listen(originPort, '127.0.0.1', r));
  ad = await startSambaAd();
  member = await startSeamlessMember(ad, {
    baseUrl: `http://127.0.0.1:${doormanPort}/`,
    listen: [{ host: '127.0.0.1', port: doormanPort }],
    trustedProxies: ['127.0.0.1'],
    squid: {
      ttl: 0,
      negativeTtl: 0,
      groups: { ttl: 0, negativeTtl: 0, allow: ['proxy-users'] },
    },
  });
  const enabled = await member.enable();
  if (enabled.code !== 0) throw new Error(`enable failed:\n${enabled.stdout}${enabled.stderr}`);
  // serve (and authd, and ntlm_auth under it) on the proxy host: ntlm_auth reaches the member's winbindd.
  serve = member.spawn(DOORMAN, ['serve', '--config', member.configFile]);
  await waitForPort('127.0.0.1', doormanPort, 15_000, serve.child);
  squidDir = join(member.dir, 'squid');
  const conf = (
    await member.doorman([
      'squid-conf',
      '--standalone',
      squidDir,
      '--port',
      `${member.address}:${squidPort}`,
      '--loopback-dns',
    ])
  ).stdout.trim();
  await run('squid', ['-k', 'parse', '-f', conf]);
  squid = member.spawn('squid', ['-N', '-f', conf]);
  await waitForPort(member.address, squidPort, 15_000, squid.child);
  apiKey = (await member.doorman(['api-key', 'create', '--name', 'seamless'])).stdout.trim();
}, 180_000);

afterAll(async () => {
  await squid?.stop();
  // SIGTERM: serve stops authd and its privileged child before it exits.
  if (serve !== undefined) await terminate(serve);
  await member?.stop();
  await ad?.stop();
  await new Promise((r) => origin?.close(r));
});

const PROXY = () => `http://proxy.example.test:${squidPort}`;
const URL_ = () => `http://127.0.0.1:${originPort}/page`;

/** curl on the proxy host (which resolves proxy.example.test): final status and the response headers. */
async function curl(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ status: number; headers: string }> {
  const { stdout } = await member.exec(
    'curl',
    [
      '-s',
      '-o',
      '/dev/null',
      '-D',
      '-',
      '-w',
      '%{http_code}',
      '--max-time',
      '20',
      '-x',
      PROXY(),
      ...args,
      URL_(),
    ],
    { env: { ...process.env, KRB5_CONFIG: ad.krb5ConfFile, ...env }, allowFailure: true },
  );
  return { status: Number(stdout.slice(-3)), headers: stdout.slice(0, -3) };
}

async function ticket(user: string): Promise<string> {
  const cache = join(member.dir, `${user}.ccache`);
  await member.exec('kinit', [user], {
    input: `${PASSWORD}\n`,
    env: { ...process.env, KRB5_CONFIG: ad.krb5ConfFile, KRB5CCNAME: `FILE:${cache}` },
  });
  return `FILE:${cache}`;
}

const accessLog = () => {
  const file = join(squidDir, 'logs', 'access.log');
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
};
const cacheLog = () => readFileSync(join(squidDir, 'logs', 'cache.log'), 'utf8');

describe('seamless authentication through Squid', () => {
  it('Kerberos: alice with a ticket passes as alice, without a password', async () => {
    const ccache = await ticket('alice');
    const res = await curl(['--proxy-negotiate', '-U', ':'], { KRB5CCNAME: ccache });
    expect(res.status, `${res.headers}\n${cacheLog().slice(-2000)}`).toBe(200);
    expect(res.headers).toMatch(/^x-doorman-user: alice\r?$/im);
    expect(accessLog()).toMatch(/ alice /);
  });

  // The computer account's HTTP/, host/ and cifs/ names share its key: GSSAPI alone would take any of them.
  it.each(['host', 'cifs'])(
    "Kerberos: a ticket for %s/ of the proxy's account gets 407, WRONG_PRINCIPAL in cache.log",
    async (service) => {
      const ccache = await ticket('alice');
      const tokens = await member.exec(...tokenCommand(`${service}@proxy.example.test`, 1), {
        env: { ...process.env, KRB5_CONFIG: ad.krb5ConfFile, KRB5CCNAME: ccache },
      });
      const res = await http(URL_(), {
        proxy: { host: member.address, port: squidPort },
        headers: { 'proxy-authorization': `Negotiate ${tokens.stdout.trim()}` },
      });
      expect(res.status).toBe(407);
      expect(cacheLog()).toContain(
        `Kerberos token refused (WRONG_PRINCIPAL): the ticket is for "${service}/proxy.example.test@EXAMPLE.TEST"`,
      );
    },
  );

  it('NTLM: alice passes as alice; a wrong password gets 407', async () => {
    const res = await curl(['--proxy-ntlm', '-U', `EXAMPLE\\alice:${PASSWORD}`]);
    expect(res.status, res.headers).toBe(200);
    expect(res.headers).toMatch(/^x-doorman-user: alice\r?$/im);
    expect((await curl(['--proxy-ntlm', '-U', 'EXAMPLE\\alice:Wrong-passw0rd'])).status).toBe(407);
  });

  it('NTLM inside SPNEGO (a Windows client without a ticket): alice passes as alice', async () => {
    expect(
      existsSync(GSS_NTLMSSP_MECH_CONFIG),
      `${GSS_NTLMSSP_MECH_CONFIG}: run scripts/install-system.sh test`,
    ).toBe(true);
    const users = join(member.dir, 'ntlm-users');
    writeFileSync(users, `EXAMPLE:alice:${PASSWORD}\n`, { mode: 0o600 });
    const res = await curl(['--proxy-negotiate', '-U', ':'], {
      GSS_MECH_CONFIG: GSS_NTLMSSP_MECH_CONFIG,
      NTLM_USER_FILE: users,
      KRB5CCNAME: `FILE:${join(member.dir, 'none.ccache')}`,
    });
    expect(res.status, `${res.headers}\n${cacheLog().slice(-2000)}`).toBe(200);
    expect(res.headers).toMatch(/^x-doorman-user: alice\r?$/im);
  });

  it('Basic still works beside them; a wrong password gets 407', async () => {
    const res = await curl(['--proxy-basic', '-U', `alice:${PASSWORD}`]);
    expect(res.status).toBe(200);
    expect(res.headers).toMatch(/^x-doorman-user: alice\r?$/im);
    expect((await curl(['--proxy-basic', '-U', 'alice:Wrong-passw0rd'])).status).toBe(407);
  });

  it('refuses carol, who is outside squid.groups.allow, with 403 (Kerberos and NTLM)', async () => {
    const ccache = await ticket('carol');
    expect((await curl(['--proxy-negotiate', '-U', ':'], { KRB5CCNAME: ccache })).status).toBe(403);
    expect((await curl(['--proxy-ntlm', '-U', `EXAMPLE\\carol:${PASSWORD}`])).status).toBe(403);
  });

  it('never challenges a client with an API session', async () => {
    const proxy = { host: member.address, port: squidPort };
    const f = form({ api_key: apiKey, username: 'bob' });
    const login = await http(`http://127.0.0.1:${doormanPort}/api/login/`, {
      method: 'POST',
      from: '127.0.0.9',
      proxy,
      body: f.body,
      headers: f.headers,
    });
    expect(login.status, login.body).toBe(200);
    const page = await http(URL_(), { from: '127.0.0.9', proxy });
    expect(page.status).toBe(200);
    expect(page.headers['x-doorman-user']).toBe('bob');
    expect(page.headers['proxy-authenticate']).toBeUndefined();
  });

  it('Enable again (a repair) with --squid-include rewrites the include and reconfigures Squid; Kerberos still passes', async () => {
    const include = join(squidDir, 'doorman.conf');
    const before = readFileSync(include, 'utf8');
    writeFileSync(include, '# emptied by the test\n', { mode: 0o600 });
    const again = await member.enable([
      '--squid-include',
      include,
      '--squid-conf',
      join(squidDir, 'squid.conf'),
    ]);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toMatch(
      /^\[ok {2}\] Update Squid's configuration: wrote .*doorman\.conf and reconfigured Squid/m,
    );
    expect(readFileSync(include, 'utf8')).toBe(before);
    const ccache = await ticket('alice');
    expect((await curl(['--proxy-negotiate', '-U', ':'], { KRB5CCNAME: ccache })).status).toBe(200);
  });

  it("the admin screen repairs through serve's root child, the password never on the page", async () => {
    const adminPassword = 'Scr33n-Passw0rd!';
    await member.doorman(['admin', 'passwd', '--user', 'admin'], { input: `${adminPassword}\n` });
    const browse = browser(() => `http://127.0.0.1:${doormanPort}/`);
    const csrfOf = (page: { body: string }) => /name="csrf" value="([^"]*)"/.exec(page.body)?.[1] ?? '';
    const signIn = await browse('admin/sign-in');
    const signedIn = await browse('admin/sign-in', {
      csrf: csrfOf(signIn),
      user: 'admin',
      password: adminPassword,
    });
    expect(signedIn.status).toBe(303);
    const screen = await browse('admin/seamless');
    expect(screen.status).toBe(200);
    const repaired = await browse('admin/seamless/enable', {
      csrf: csrfOf(screen),
      serverVersion: '2012',
      domain: 'example.test',
      netbiosDomain: '',
      adminUser: 'Administrator',
      adminPassword: ad.adminPassword,
    });
    expect(repaired.status).toBe(200);
    // The steps ran in the root child: the join kept (same computer), the keys written, the trust checked.
    expect(repaired.body).toMatch(/already joined/);
    expect(repaired.body).toMatch(/the trust to the domain works/);
    expect(repaired.body).not.toContain(ad.adminPassword);
    const ccache = await ticket('alice');
    expect((await curl(['--proxy-negotiate', '-U', ':'], { KRB5CCNAME: ccache })).status).toBe(200);
  });
});
