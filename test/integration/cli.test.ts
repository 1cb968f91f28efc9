import { execFile as execFileCb, execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, requireSystem } from '../harness/lab.ts';

const execFile = promisify(execFileCb);

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let dir: string;
let config: string;
beforeAll(() => {
  requireSystem();
  dir = mkdtempSync(join(tmpdir(), 'doorman-cli-'));
  chmodSync(dir, 0o755);
  config = join(dir, 'doorman.json');
  writeFileSync(config, JSON.stringify({ stateDir: join(dir, 'state') }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function doorman(...args: string[]): Promise<Run> {
  try {
    const { stdout, stderr } = await execFile(join(ROOT, 'bin', 'doorman'), args, { encoding: 'utf8' });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
const withConfig = (...args: string[]) => doorman(...args, '--config', config);

describe('doorman CLI', () => {
  it.each(['serve', 'squid-conf', 'api-key', 'sessions', 'explain'])(
    '%s --help prints usage and exits 0',
    async (name) => {
      const run = await doorman(name, '--help');
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(new RegExp(`^Usage: doorman ${name}`));
    },
  );

  it('exits 2 with a message on stderr for an unknown command, option or action', async () => {
    for (const args of [
      ['frobnicate'],
      ['sessions', '--bogus'],
      ['api-key', 'rotate'],
      ['sessions', 'end', 'not-an-ip'],
      ['explain', 'not-an-ip'],
      ['explain', '10.0.0.5', '--mac', '00:00:00:00:00:00'],
    ]) {
      const run = await doorman(...args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^doorman: /);
    }
  });

  it('exits 1 naming the field for an invalid config file', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ listen: [{ host: 'localhost', port: 99999 }], extra: 1 }));
    const run = await doorman('sessions', 'list', '--config', bad);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/listen\.0\.host: /);
    expect(run.stderr).toMatch(/listen\.0\.port: /);
    expect(run.stderr).toMatch(/extra/);
  });

  it('creates a key once, lists it without the secret, revokes it', async () => {
    const created = await withConfig('api-key', 'create', '--name', 'logon script');
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^dm\.[A-Za-z0-9_-]{12}\.[A-Za-z0-9_-]{43}$/);
    const secret = key.split('.')[2] as string;
    const listed = await withConfig('api-key', 'list');
    expect(listed.stdout).toMatch(/^logon script\t\S+\t-\t-$/m);
    expect(listed.stdout).not.toContain(secret);
    expect((await withConfig('api-key', 'create', '--name', 'logon script')).code).toBe(1);
    expect((await withConfig('api-key', 'revoke', '--name', 'logon script')).code).toBe(0);
    expect((await withConfig('api-key', 'list')).stdout).toMatch(/^logon script\t\S+\t-\t\d{4}-/m);
    expect((await withConfig('api-key', 'revoke', '--name', 'nobody')).code).toBe(1);
  });

  it('keeps the DB private to the service user (proxy)', () => {
    const state = join(dir, 'state');
    const proxyUid = Number(execFileSync('id', ['-u', 'proxy'], { encoding: 'utf8' }));
    expect(statSync(state).mode & 0o777).toBe(0o700);
    expect(statSync(state).uid).toBe(proxyUid);
    for (const file of readdirSync(state)) {
      const stat = statSync(join(state, file));
      expect(stat.uid, file).toBe(proxyUid);
      expect(stat.mode & 0o077, file).toBe(0);
    }
  });

  it.each([
    {
      kind: 'symbolic', // it could point at /etc/shadow
      file: 'doorman.db-wal',
      plant: symlinkSync,
      refusal: /doorman\.db-wal is not a regular file \(a symbolic link\?\); refusing to use it/,
    },
    {
      kind: 'hard', // where fs.protected_hardlinks is off
      file: 'doorman.db-shm',
      plant: linkSync,
      refusal: /doorman\.db-shm is not a regular file with one name \(a hard link\?\)/,
    },
  ])(
    'refuses to chown a $kind link planted in the state directory',
    async ({ kind, file, plant, refusal }) => {
      const state = join(dir, `${kind}-trap-state`);
      const target = join(dir, `${kind}-precious`);
      writeFileSync(target, 'root only\n', { mode: 0o600 });
      mkdirSync(state, { mode: 0o700 });
      plant(target, join(state, file));
      const trapConfig = join(dir, `${kind}-trap.json`);
      writeFileSync(trapConfig, JSON.stringify({ stateDir: state }));
      const run = await doorman('sessions', 'list', '--config', trapConfig);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(refusal);
      expect(statSync(target).uid).toBe(0);
    },
  );

  it('refuses a stateDir below a directory the service user could write, changing nothing', async () => {
    const proxyUid = Number(execFileSync('id', ['-u', 'proxy'], { encoding: 'utf8' }));
    const theirs = join(dir, 'proxy-owned');
    mkdirSync(theirs, { mode: 0o755 });
    chownSync(theirs, proxyUid, proxyUid);
    const trapConfig = join(dir, 'proxy-owned.json');
    writeFileSync(trapConfig, JSON.stringify({ stateDir: join(theirs, 'state') }));
    const run = await doorman('sessions', 'list', '--config', trapConfig);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /proxy-owned is not root's \(owner uid \d+, mode 0755\); root will not use it/,
    );
    expect(existsSync(join(theirs, 'state'))).toBe(false);
  });

  it('lists, ends and clears sessions', async () => {
    expect((await withConfig('sessions', 'list')).stdout.trim().split('\n')).toHaveLength(1); // the header
    const ended = await withConfig('sessions', 'end', '10.0.0.5');
    expect(ended.code).toBe(1);
    expect(ended.stderr).toMatch(/no session on 10\.0\.0\.5/);
    expect((await withConfig('sessions', 'clear')).stdout).toMatch(/ended 0 session/);
  });
});
