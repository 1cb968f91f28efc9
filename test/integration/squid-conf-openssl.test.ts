import { execFile as execFileCb } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureProxyKey } from '../../lib/security/proxy-key.ts';
import { lookupUser } from '../../lib/system/service-user.ts';
import { ROOT, requireSystem } from '../harness/lab.ts';
import { run, type RunOptions } from '../harness/run.ts';
import { squidOpenssl, SYSTEM_SQUID, type SquidOpenssl } from '../harness/squid-openssl.ts';

/**
 * `doorman squid-conf` with HTTPS interception: the include passes `squid -k parse` under Squid's OpenSSL build
 * (squid-openssl, unpacked beside the system's by install-system.sh test) and, without ssl-bump, under the
 * installed GnuTLS build too; for the GnuTLS build Doorman says what to install instead of leaving Squid to
 * stop on a line it cannot read. `--init-tls` makes Doorman's CA and the cert DB.
 */
const execFile = promisify(execFileCb);
const DOORMAN = join(ROOT, 'bin', 'doorman');

let dir: string;
let stateDir: string;
let openssl: SquidOpenssl;
beforeAll(async () => {
  requireSystem();
  openssl = squidOpenssl();
  dir = mkdtempSync(join(tmpdir(), 'doorman-conf-tls-'));
  chmodSync(dir, 0o755);
  stateDir = join(dir, 'state');
  mkdirSync(stateDir, { mode: 0o700 });
  ensureProxyKey(join(stateDir, 'proxy-key'));
  // The CA the includes below name (Squid loads the certificate while parsing).
  await initTls(configFile({ httpPort: 3129, httpsPort: 3130 }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function configFile(intercept: Record<string, unknown> | undefined, state = stateDir): string {
  const file = join(dir, `config-${++files}.json`);
  const tls = { certgen: openssl.certgen };
  const squid =
    intercept === undefined
      ? {}
      : { intercept: { ...intercept, tls: { ...tls, ...(intercept.tls as object | undefined) } } };
  writeFileSync(file, JSON.stringify({ stateDir: state, squid }), { mode: 0o644 });
  return file;
}

/** squid -k parse with `squid` on a squid.conf that includes `include`; Squid's output and exit code. */
async function squidParse(squid: string, include: string): Promise<{ output: string; code: number }> {
  const conf = join(dir, `squid-${++files}.conf`);
  writeFileSync(conf, `http_port 127.0.0.1:3999\ninclude ${include}\nhttp_access deny all\n`);
  const result = await run(squid, ['-k', 'parse', '-f', conf], { allowFailure: true });
  return { output: result.stderr + result.stdout, code: result.code ?? -1 };
}

async function include(config: string, extra: string[] = []): Promise<string> {
  const path = join(dir, `include-${++files}.conf`);
  writeFileSync(path, (await run(DOORMAN, ['squid-conf', '--config', config, ...extra])).stdout);
  return path;
}

/** `doorman squid-conf --init-tls` on a configuration file. */
const initTls = (config: string, options?: RunOptions) =>
  run(DOORMAN, ['squid-conf', '--init-tls', '--config', config], options);

const clean = (output: string) => expect(output).not.toMatch(/ERROR|WARNING|FATAL|Bungled/i);

describe('doorman squid-conf --init-tls', () => {
  it('makes Doorman’s CA (key 0600, never printed) and a cert DB owned by Squid’s user; a second run keeps both', async () => {
    const state = join(dir, 'init-state');
    mkdirSync(state);
    const config = configFile({ httpPort: 3129, httpsPort: 3130 }, state);
    const first = await initTls(config);
    const pem = join(`${state}-tls`, 'ssl-bump-ca.pem');
    const crt = join(`${state}-tls`, 'ssl-bump-ca.crt');
    expect(first.stdout.split('\n').filter(Boolean)).toEqual([
      `CA: made ${pem} (key and certificate, mode 0600)`,
      `Clients must trust this certificate: ${crt}`,
      `cert DB: made ${join(state, 'ssl-bump-db')}`,
    ]);
    expect(first.stdout + first.stderr).not.toMatch(/PRIVATE KEY|BEGIN/);
    expect(statSync(pem).mode & 0o777).toBe(0o600);
    expect(readFileSync(pem, 'utf8')).toMatch(/PRIVATE KEY[\s\S]*BEGIN CERTIFICATE/);
    expect(readFileSync(crt, 'utf8')).not.toMatch(/PRIVATE KEY/);
    const { stdout: ca } = await execFile('openssl', [
      'x509',
      '-in',
      crt,
      '-noout',
      '-subject',
      '-ext',
      'basicConstraints',
    ]);
    expect(ca).toMatch(/subject=O = Doorman, CN = Doorman captive portal CA/);
    expect(ca).toMatch(/critical\s+CA:TRUE/);
    const proxy = lookupUser('proxy');
    for (const f of ['ssl-bump-db', 'ssl-bump-db/index.txt', 'ssl-bump-db/certs'])
      expect(statSync(join(state, f)).uid, f).toBe(proxy.uid);

    const before = readFileSync(pem, 'utf8');
    const second = await initTls(config);
    expect(second.stdout).toContain(`CA: ${pem} exists, kept`);
    expect(second.stdout).toContain(`cert DB: ${join(state, 'ssl-bump-db')} exists, kept`);
    expect(readFileSync(pem, 'utf8')).toBe(before);
  });

  it('in a stateDir of the service user’s, certgen runs as that user and root writes only new files', async () => {
    const proxy = lookupUser('proxy');
    const state = join(dir, 'proxy-state');
    mkdirSync(state, { mode: 0o700 });
    chownSync(state, proxy.uid, proxy.gid);
    // certgen as Doorman runs it, saying which user ran it.
    const certgen = join(dir, 'certgen-as');
    const ranAs = join(dir, 'certgen-uid');
    writeFileSync(certgen, `#!/bin/sh\nid -u > ${ranAs}\nexec ${openssl.certgen} "$@"\n`, { mode: 0o755 });
    writeFileSync(ranAs, '');
    chmodSync(ranAs, 0o666);
    const result = await initTls(configFile({ httpPort: 3129, httpsPort: 3130, tls: { certgen } }, state));
    expect(result.stdout).toContain(`cert DB: made ${join(state, 'ssl-bump-db')}`);
    expect(readFileSync(ranAs, 'utf8').trim()).toBe(String(proxy.uid));
    for (const f of ['ssl-bump-db', 'ssl-bump-db/index.txt', 'ssl-bump-db/certs'])
      expect(statSync(join(state, f)).uid, f).toBe(proxy.uid);
    // The CA is root's, beside stateDir: nothing of it (nor openssl's work) is in the service user's directory.
    expect(statSync(join(`${state}-tls`, 'ssl-bump-ca.pem'))).toMatchObject({ uid: 0, nlink: 1 });
    expect(readdirSync(state)).toEqual(['ssl-bump-db']);
  });

  it('mode refuse: the CA only (Squid needs one on the port), no cert DB', async () => {
    const state = join(dir, 'refuse-state');
    mkdirSync(state);
    const result = await initTls(
      configFile({ httpPort: 3129, httpsPort: 3130, tls: { mode: 'refuse' } }, state),
    );
    expect(result.stdout).toMatch(/^CA: made /m);
    expect(result.stdout).toMatch(/^mode refuse: no cert DB needed, and clients need not trust the CA/m);
    expect(result.stdout).not.toMatch(/cert DB: made/);
  });

  it('makes its CA where only root can write: a CA the service user plants in stateDir or beside it is not used', async () => {
    const proxy = lookupUser('proxy');
    const state = join(dir, 'planted-state');
    mkdirSync(state, { mode: 0o700 });
    chownSync(state, proxy.uid, proxy.gid);
    // As proxy could leave them: its own "CA" in stateDir, where Doorman once kept it.
    for (const name of ['ssl-bump-ca.pem', 'ssl-bump-ca.crt']) writeFileSync(join(state, name), 'planted\n');
    const config = configFile({ httpPort: 3129, httpsPort: 3130, tls: { mode: 'refuse' } }, state);
    const made = await initTls(config);
    expect(made.stdout).toContain(`CA: made ${join(`${state}-tls`, 'ssl-bump-ca.pem')}`);
    expect(readFileSync(join(`${state}-tls`, 'ssl-bump-ca.crt'), 'utf8')).toMatch(
      /^-----BEGIN CERTIFICATE-----/,
    );
    expect(readFileSync(join(state, 'ssl-bump-ca.crt'), 'utf8')).toBe('planted\n');
    // A CA directory that is not root's alone is refused, whatever it holds.
    const other = join(dir, 'other-state');
    mkdirSync(other);
    mkdirSync(`${other}-tls`, { mode: 0o755 });
    chownSync(`${other}-tls`, proxy.uid, proxy.gid);
    writeFileSync(join(`${other}-tls`, 'ssl-bump-ca.pem'), 'planted\n');
    const refused = await initTls(
      configFile({ httpPort: 3129, httpsPort: 3130, tls: { mode: 'refuse' } }, other),
      { allowFailure: true },
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/other-state-tls is not root's .*root will not use it/);
  });

  it('says what is wrong: no HTTPS port, or an administrator’s CA file that is not there', async () => {
    const none = await initTls(configFile(undefined), { allowFailure: true });
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/squid\.intercept\.httpsPort is null: HTTPS is not intercepted/);
    const missing = await initTls(
      configFile({ httpPort: 3129, httpsPort: 3130, tls: { caFile: join(dir, 'nope.pem') } }),
      { allowFailure: true },
    );
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`squid.intercept.tls.caFile: ${join(dir, 'nope.pem')} does not exist`);
  });

  it('refuses a cert DB in a directory that is neither Squid’s user’s nor root’s alone, making nothing', async () => {
    const state = join(dir, 'db-state');
    const shared = join(dir, 'shared');
    mkdirSync(state);
    mkdirSync(shared, { mode: 0o777 });
    chmodSync(shared, 0o777); // writable by all, not sticky
    const certDb = join(shared, 'ssl_db');
    const refused = await initTls(configFile({ httpPort: 3129, httpsPort: 3130, tls: { certDb } }, state), {
      allowFailure: true,
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/shared can be written by others than root .*root will not use it/);
    expect(readdirSync(shared)).toEqual([]);
  });
});

describe('the include passes squid -k parse', () => {
  const cases = [
    ['no interception', undefined],
    ['HTTP interception', { httpPort: 3129 }],
    ['HTTPS interception, bump', { httpPort: 3129, httpsPort: 3130 }],
    ['HTTPS interception, refuse', { httpPort: 3129, httpsPort: 3130, tls: { mode: 'refuse' } }],
  ] as const;

  it.each(cases)('%s: with squid-openssl', async (_name, intercept) => {
    const path = await include(configFile(intercept), ['--squid', openssl.squid]);
    const { output, code } = await squidParse(openssl.squid, path);
    clean(output);
    expect(code).toBe(0);
    if (intercept !== undefined && 'httpsPort' in intercept) {
      expect(output).toMatch(/Processing: https_port 3130 intercept ssl-bump name=doorman_intercept_tls /);
      expect(output).toMatch(/Processing: ssl_bump splice doorman_intercepted_tls doorman_identified/);
    }
  });

  it.each(cases.slice(0, 2))('%s: with the GnuTLS squid as well', async (_name, intercept) => {
    const path = await include(configFile(intercept));
    const { output, code } = await squidParse(SYSTEM_SQUID, path);
    clean(output);
    expect(code).toBe(0);
  });

  it('with ssl-bump and the GnuTLS squid, Doorman says to install squid-openssl instead of writing the file', async () => {
    const config = configFile({ httpPort: 3129, httpsPort: 3130 });
    const result = await run(DOORMAN, ['squid-conf', '--config', config], { allowFailure: true });
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain(
      'squid.intercept.httpsPort needs Squid built with OpenSSL (Debian package squid-openssl), but squid is ' +
        'the GnuTLS build',
    );
    // ...where Squid itself would only have said this:
    const path = await include(config, ['--squid', openssl.squid]);
    const { output } = await squidParse(SYSTEM_SQUID, path);
    expect(output).toMatch(/FATAL: Unknown https_port option 'ssl-bump'/);
  });
});
