import { execFile as execFileCb } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtime } from '../../cli/commands/squid-conf.ts';
import { systemClock } from '../../lib/clock.ts';
import { dbPath, parseConfig } from '../../lib/config/load.ts';
import { ensureProxyKey } from '../../lib/security/proxy-key.ts';
import { openDatabase } from '../../lib/store/database.ts';
import { SeamlessSettingsStore } from '../../lib/store/seamless-settings-store.ts';
import { lookupUser } from '../../lib/system/service-user.ts';
import { generateInclude } from '../../squid-conf/generate.ts';
import { ROOT, requireSystem } from '../harness/lab.ts';
import { joinedState } from '../support/seamless-state.ts';

const execFile = promisify(execFileCb);
const doorman = (...args: string[]) => execFile(join(ROOT, 'bin', 'doorman'), args, { encoding: 'utf8' });

let dir: string;
/** Where the configs below keep their state: the proxy key that "doorman serve" would have made. */
let stateDir: string;
beforeAll(() => {
  requireSystem();
  dir = mkdtempSync(join(tmpdir(), 'doorman-conf-'));
  chmodSync(dir, 0o755);
  stateDir = join(dir, 'state');
  mkdirSync(stateDir, { mode: 0o700 });
  ensureProxyKey(join(stateDir, 'proxy-key'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** squid -k parse on a squid.conf that includes `include`; resolves with Squid's output, rejects on errors. */
async function squidParse(include: string): Promise<string> {
  const conf = join(dir, `squid-${Math.random().toString(36).slice(2)}.conf`);
  writeFileSync(conf, `http_port 127.0.0.1:3999\ninclude ${include}\nhttp_access deny all\n`);
  const { stderr } = await execFile('squid', ['-k', 'parse', '-f', conf]);
  return stderr;
}

describe('doorman squid-conf output passes squid -k parse', () => {
  it.each([
    ['embedded defaults', {}, []],
    ['a host name base URL over https', { baseUrl: 'https://doorman.example.lan/portal/' }, []],
    [
      'an IPv6 base URL and an access log',
      { baseUrl: 'http://[::1]:8180/' },
      ['--access-log', '/tmp/doorman-access.log'],
    ],
    ['ACLs only, no access rules', {}, ['--acls-only']],
  ])('%s', async (_name, config, extra) => {
    const file = join(dir, `${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify({ stateDir, ...config }), { mode: 0o644 });
    const include = join(dir, `${Math.random().toString(36).slice(2)}.conf`);
    writeFileSync(include, (await doorman('squid-conf', '--config', file, ...extra)).stdout);
    const output = await squidParse(include);
    expect(output).not.toMatch(/ERROR|WARNING|FATAL|Bungled/i);
    expect(output).toMatch(/Processing: external_acl_type doorman_session /);
  });

  it('with a directory and allowed groups (spaces, non-ASCII)', async () => {
    const config = parseConfig(
      { stateDir, squid: { groups: { allow: ['Staff Users', 'Ünïcødé Group'] } } },
      'test',
    );
    const include = join(dir, 'with-directory.conf');
    writeFileSync(
      include,
      generateInclude(config, runtime({ config, path: undefined }), { directory: true }),
    );
    const output = await squidParse(include);
    expect(output).not.toMatch(/ERROR|WARNING|FATAL|Bungled/i);
    expect(output).toMatch(/Processing: auth_param basic program /);
    expect(output).toMatch(
      /Processing: acl doorman_allowed_group external doorman_group "Staff Users" "Ünïcødé Group"/,
    );
  });

  it('with the captive portal: intercept port and ICAP service (parses without NAT present)', async () => {
    const config = parseConfig({ stateDir, squid: { groups: { allow: ['Staff'] } } }, 'test');
    const include = join(dir, 'with-portal.conf');
    writeFileSync(
      include,
      generateInclude(config, runtime({ config, path: undefined }), {
        directory: true,
        portal: { interceptPort: 3998, icap: { host: '::1', port: 1344 } },
      }),
    );
    const output = await squidParse(include);
    expect(output).not.toMatch(/ERROR|WARNING|FATAL|Bungled/i);
    expect(output).toMatch(/Processing: http_port 3998 intercept name=doorman_intercept/);
    expect(output).toMatch(
      /Processing: icap_service doorman_portal reqmod_precache bypass=0 icap:\/\/\[::1\]:1344\/reqmod/,
    );
    expect(output).toMatch(
      /Processing: adaptation_access doorman_portal allow doorman_intercepted !doorman_identified/,
    );
    expect(output).toMatch(/Processing: acl doorman_to_portal adaptation_service doorman_portal/);
    expect(output).toMatch(/Processing: adaptation_meta X-Doorman-Key "[A-Za-z0-9_-]{43}" doorman_to_portal/);
    expect(output).toMatch(/Processing: http_access allow doorman_intercepted/);
  });

  it('doorman squid-conf with squid.intercept.httpPort set: the portal lines with the icap host and port', async () => {
    const file = join(dir, 'intercept.json');
    writeFileSync(
      file,
      JSON.stringify({
        stateDir,
        squid: { intercept: { httpPort: 3997 } },
        icap: { host: '::1', port: 11344 },
      }),
      { mode: 0o644 },
    );
    const include = join(dir, 'intercept.conf');
    writeFileSync(include, (await doorman('squid-conf', '--config', file)).stdout);
    const output = await squidParse(include);
    expect(output).not.toMatch(/ERROR|WARNING|FATAL|Bungled/i);
    expect(output).toMatch(/Processing: http_port 3997 intercept name=doorman_intercept/);
    expect(output).toMatch(/Processing: host_verify_strict on/);
    expect(output).toMatch(
      /Processing: icap_service doorman_portal reqmod_precache bypass=0 icap:\/\/\[::1\]:11344\/reqmod/,
    );
    expect(output).toMatch(/Processing: http_access allow doorman_intercepted/);
  });

  it('doorman squid-conf without squid.intercept.httpPort: no portal line', async () => {
    const file = join(dir, 'no-intercept.json');
    writeFileSync(file, JSON.stringify({ stateDir, icap: { port: 11344 } }), { mode: 0o644 });
    const { stdout } = await doorman('squid-conf', '--config', file);
    const directives = stdout.split('\n').filter((line) => !line.startsWith('#'));
    expect(directives.filter((line) => /intercept|icap|adaptation_|host_verify_strict/.test(line))).toEqual(
      [],
    );
  });

  it('fails with exit code 1 and the field name on a bad config', async () => {
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ squid: { ttl: -1 } }));
    const error = await doorman('squid-conf', '--config', file).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(error).toMatchObject({ code: 1 });
    expect((error as { stderr: string }).stderr).toMatch(/squid\.ttl: /);
  });

  it('doorman squid-conf once the proxy joined the domain: Negotiate, then NTLM, through the shim', async () => {
    // A state dir of its own, as "doorman serve" leaves it: the service user's, with the DB and the proxy key.
    const joined = join(dir, 'joined');
    mkdirSync(joined, { mode: 0o700 });
    ensureProxyKey(join(joined, 'proxy-key'));
    const config = parseConfig({ stateDir: joined }, 'test');
    const db = openDatabase(dbPath(config));
    new SeamlessSettingsStore(db, { clock: systemClock }).save(joinedState());
    db.close();
    const proxy = lookupUser('proxy');
    for (const name of ['', 'proxy-key', 'doorman.db', 'doorman.db-wal', 'doorman.db-shm']) {
      const path = join(joined, name);
      if (existsSync(path)) chownSync(path, proxy.uid, proxy.gid);
    }
    const file = join(dir, 'joined.json');
    writeFileSync(file, JSON.stringify({ stateDir: joined }), { mode: 0o644 });
    const include = join(dir, 'joined.conf');
    writeFileSync(include, (await doorman('squid-conf', '--config', file)).stdout);
    const output = await squidParse(include);
    expect(output).not.toMatch(/ERROR|WARNING|FATAL|Bungled/i);
    const shim = join(ROOT, 'dist', 'bin', 'doorman-shim');
    const schemes = [...output.matchAll(/Processing: auth_param (\w+) program (.*)$/gm)].map((m) => [
      m[1],
      m[2],
    ]);
    expect(schemes).toEqual([
      ['negotiate', `${shim} ${joined}/run/negotiate.sock`],
      ['ntlm', `${shim} ${joined}/run/ntlm.sock`],
    ]);
    expect(output).toMatch(/Processing: auth_param negotiate children 20 startup=1 idle=1$/m);
    expect(output).toMatch(/Processing: auth_param ntlm keep_alive on$/m);
    expect(output).toMatch(/Processing: http_access allow doorman_authenticated$/m);
    // Read as the service user: root left no file of its own in the state dir.
    for (const name of readdirSync(joined)) {
      expect(statSync(join(joined, name)).uid, name).toBe(proxy.uid);
    }
  });

  it('fails with exit code 1 and says what to do when there is no proxy key yet', async () => {
    const file = join(dir, 'no-key.json');
    writeFileSync(file, JSON.stringify({ stateDir: join(dir, 'never-served') }));
    const error = await doorman('squid-conf', '--config', file).catch(
      (e: { code: number; stderr: string }) => e,
    );
    expect(error).toMatchObject({ code: 1 });
    expect((error as { stderr: string }).stderr).toMatch(
      /cannot read the proxy key .*never-served\/proxy-key: there is none yet: start "doorman serve" once/,
    );
  });
});
