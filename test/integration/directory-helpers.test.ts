import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { applyDirectory } from '../harness/apply-directory.ts';
import { HelperProcess } from '../harness/helper-process.ts';
import { ROOT } from '../harness/lab.ts';
import { run } from '../harness/run.ts';
import { startSlapd, USER_PASSWORD, type Slapd } from '../harness/slapd.ts';

/**
 * The Basic and group helpers over their pipes, as Squid drives them, against a real slapd: bad input of
 * every kind gets ERR or BH and the helper stays up; an outage gives BH and the helper recovers alone.
 */
let slapd: Slapd;
let dir: string;
let config: string;
let basic: HelperProcess;
let group: HelperProcess;
const esc = encodeURIComponent;

beforeAll(async () => {
  slapd = await startSlapd();
  dir = mkdtempSync(join(tmpdir(), 'doorman-dirhelpers-'));
  chmodSync(dir, 0o755);
  config = join(dir, 'doorman.json');
  writeFileSync(config, JSON.stringify({ stateDir: join(dir, 'state') }));
  // every group question goes to the directory, so the outage below reaches the group helper too
  await applyDirectory(
    (args, options) => run(join(ROOT, 'bin', 'doorman'), [...args, '--config', config], options),
    slapd,
    ['--group-cache', '0'],
  );
  basic = new HelperProcess('basic-auth.js', ['--config', config]);
  group = new HelperProcess('group-acl.js', ['--config', config]);
}, 30_000);
afterAll(async () => {
  basic?.child.kill();
  group?.child.kill();
  await slapd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('basic-auth helper', () => {
  it('answers OK with the normalised name, ERR for a wrong password', async () => {
    expect(await basic.ask(`Alice ${esc(USER_PASSWORD)}`)).toBe('OK user=alice');
    expect(await basic.ask(`alice wrong`)).toBe('ERR message=wrong-password');
  });

  it.each([
    ['a wildcard user name', `* ${esc(USER_PASSWORD)}`],
    // unescaped, "alic*" would match exactly one account (alice) and her password would pass
    ['a wildcard that would match one user', `${esc('alic*')} ${esc(USER_PASSWORD)}`],
    ['a filter that would match one user', `${esc('alice)(uid=alice')} ${esc(USER_PASSWORD)}`],
    ['a filter injection', `${esc(')(uid=*')} ${esc(USER_PASSWORD)}`],
    ['an injection with a valid prefix', `${esc('alice)(uid=*')} ${esc(USER_PASSWORD)}`],
    ['an escaped NUL', `${esc('\\00')} ${esc(USER_PASSWORD)}`],
    ['a 10 kB user name', `${'a'.repeat(10_000)} ${esc(USER_PASSWORD)}`],
    ['an empty password', `alice %00`.replace(' %00', ' ')],
    ['no password at all', 'alice'],
    ['nothing', ''],
  ])('refuses %s with ERR and stays up', async (_name, fields) => {
    expect(await basic.ask(fields)).toMatch(/^ERR/);
    expect(basic.alive).toBe(true);
  });

  it('takes the client address, and refuses an account past its wrong passwords without asking (RATE_LIMITED)', async () => {
    // erin signs in from 10.9.0.1; somebody at other addresses then uses up her five wrong passwords
    expect(await basic.ask(`erin ${esc(USER_PASSWORD)} 10.9.0.1`)).toBe('OK user=erin');
    for (let i = 0; i < 5; i++) {
      expect(await basic.ask(`erin guess${i} 10.9.1.${i}`)).toBe('ERR message=wrong-password');
    }
    const limited = await basic.ask(`ERIN ${esc(USER_PASSWORD)} 10.9.2.1`);
    expect(decodeURIComponent(limited)).toMatch(/^ERR message=RATE_LIMITED account="erin" retry_after=\d+s$/);
    // Its log line comes on stderr, a pipe of its own: it may land a moment after the answer.
    await vi.waitFor(() => expect(basic.stderr).toMatch(/basic: RATE_LIMITED account="erin"/));
    // from her own address she still gets in; Squid's "-" (no address known) counts as none
    expect(await basic.ask(`erin ${esc(USER_PASSWORD)} 10.9.0.1`)).toBe('OK user=erin');
    expect(await basic.ask(`erin ${esc(USER_PASSWORD)} -`)).toMatch(/^ERR message=RATE_LIMITED/);
    expect(await basic.ask(`erin ${esc(USER_PASSWORD)} 10.9.0.1 extra`)).toMatch(/^ERR message=expected/);
  });

  it('logs to stderr and never the password', () => {
    expect(basic.stderr).toMatch(/doorman-basic-auth/);
    expect(basic.stderr).not.toContain(USER_PASSWORD);
    expect(basic.stderr).not.toContain(slapd.bindPassword);
  });
});

describe('group helper', () => {
  it('answers OK for direct, nested, posix, uniqueMember and non-ASCII groups, ERR otherwise', async () => {
    expect(await group.ask(`alice ${esc('Staff Users')}`)).toBe('OK');
    expect(await group.ask(`bob level2`)).toBe('OK');
    expect(await group.ask(`carol posix-staff`)).toBe('OK');
    expect(await group.ask(`dave unique-group`)).toBe('OK');
    expect(await group.ask(`erin ${esc('Ünïcødé Group')}`)).toBe('OK');
    expect(await group.ask(`dave cycle-a`)).toBe('OK');
    expect(await group.ask(`carol ${esc('Staff Users')}`)).toBe('ERR');
    expect(await group.ask(`alice nosuchgroup ${esc('Staff Users')}`)).toBe('OK');
  });

  it.each([
    ['a wildcard user', `* ${esc('Staff Users')}`],
    ['a wildcard that would match one member', `${esc('alic*')} ${esc('Staff Users')}`],
    ['a filter injection in the group', `alice ${esc('*)(cn=*')}`],
    ['no group', 'alice -'],
    ['an unknown user', `mallory ${esc('Staff Users')}`],
  ])('answers ERR to %s and stays up', async (_name, fields) => {
    expect(await group.ask(fields)).toMatch(/^ERR/);
    expect(group.alive).toBe(true);
  });
});

describe('a directory outage', () => {
  it('gets BH while the directory is down, then answers again without a restart', async () => {
    await slapd.halt();
    expect(await basic.ask(`bob ${esc(USER_PASSWORD)}`)).toMatch(/^BH message=directory/);
    expect(await group.ask(`bob proxy-users`)).toMatch(/^BH message=directory/);
    await slapd.restart();
    expect(await basic.ask(`bob ${esc(USER_PASSWORD)}`)).toBe('OK user=bob');
    expect(await group.ask(`bob proxy-users`)).toBe('OK');
  });

  it('exits cleanly when Squid closes the pipe', async () => {
    expect(await basic.end()).toBe(0);
    expect(await group.end()).toBe(0);
  });
});
