import { execFile as execFileCb } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runtime } from '../../cli/commands/squid-conf.ts';
import { parseConfig } from '../../lib/config/load.ts';
import { generateInclude } from '../../squid-conf/generate.ts';
import { ROOT, requireSystem } from '../harness/lab.ts';

const execFile = promisify(execFileCb);
const doorman = (...args: string[]) => execFile(join(ROOT, 'bin', 'doorman'), args, { encoding: 'utf8' });

let dir: string;
beforeAll(() => {
  requireSystem();
  dir = mkdtempSync(join(tmpdir(), 'doorman-conf-'));
  chmodSync(dir, 0o755);
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
    writeFileSync(file, JSON.stringify(config), { mode: 0o644 });
    const include = join(dir, `${Math.random().toString(36).slice(2)}.conf`);
    writeFileSync(include, (await doorman('squid-conf', '--config', file, ...extra)).stdout);
    const output = await squidParse(include);
    expect(output).not.toMatch(/ERROR|WARNING|FATAL|Bungled/i);
    expect(output).toMatch(/Processing: external_acl_type doorman_session /);
  });

  it('with a directory and allowed groups (spaces, non-ASCII)', async () => {
    const config = parseConfig({ squid: { groups: { allow: ['Staff Users', 'Ünïcødé Group'] } } }, 'test');
    const include = join(dir, 'with-directory.conf');
    writeFileSync(include, generateInclude(config, runtime(undefined), { directory: true }));
    const output = await squidParse(include);
    expect(output).not.toMatch(/ERROR|WARNING|FATAL|Bungled/i);
    expect(output).toMatch(/Processing: auth_param basic program /);
    expect(output).toMatch(
      /Processing: acl doorman_allowed_group external doorman_group "Staff Users" "Ünïcødé Group"/,
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
});
