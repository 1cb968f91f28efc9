import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../lib/security/password-hash.ts';
import { ROOT, requireSystem } from '../harness/lab.ts';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run bin/doorman with `stdin` piped in (not a terminal), as an operator's script would. */
function doorman(args: string[], stdin = ''): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(ROOT, 'bin', 'doorman'), args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    // The CLI may exit before reading everything (a usage error): that is not this test's failure.
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
  });
}

let dir: string;
let config: string;
beforeAll(() => requireSystem());
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'doorman-cli-admin-'));
  chmodSync(dir, 0o755);
  config = join(dir, 'doorman.json');
  writeFileSync(config, JSON.stringify({ stateDir: join(dir, 'state') }));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const admin = (args: string[], stdin?: string) => doorman(['admin', ...args, '--config', config], stdin);

/** The stored hash of an admin, read straight from the DB the CLI wrote. */
function storedHash(name: string): string | undefined {
  const file = join(dir, 'state', 'doorman.db');
  if (!existsSync(file)) return undefined;
  const db = new Database(file, { readonly: true });
  try {
    const row = db.prepare('SELECT password_hash FROM admin_users WHERE name = ?').get(name) as
      { password_hash: string } | undefined;
    return row?.password_hash;
  } finally {
    db.close();
  }
}

describe('doorman admin', () => {
  it('passwd reads the password from stdin (first line), creates, then changes it', async () => {
    const created = await admin(['passwd', '--user', 'root'], 'first Pässword\nignored second line\n');
    expect(created).toEqual({ code: 0, stdout: 'created admin "root"\n', stderr: '' });
    const first = storedHash('root') ?? '';
    expect(first).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(await verifyPassword('first Pässword', first)).toBe(true);

    const changed = await admin(['passwd', '--user', 'root'], 'second one\r\n');
    expect(changed.code).toBe(0);
    expect(changed.stdout).toBe('changed the password of "root"; their sign-ins ended\n');
    const second = storedHash('root') ?? '';
    expect(await verifyPassword('second one', second)).toBe(true);
    expect(await verifyPassword('first Pässword', second)).toBe(false);
    for (const run of [created, changed]) {
      expect(run.stdout + run.stderr).not.toMatch(/Pässword|second one/);
    }
  });

  it('passwd also takes input without a final newline', async () => {
    expect((await admin(['passwd', '--user', 'ops'], 'no newline')).code).toBe(0);
    expect(await verifyPassword('no newline', storedHash('ops') ?? '')).toBe(true);
  });

  it('passwd refuses an empty password or an empty stdin (exit 1) and creates nothing', async () => {
    for (const stdin of ['', '\n', '\r\n']) {
      const run = await admin(['passwd', '--user', 'root'], stdin);
      expect(run.code, JSON.stringify(stdin)).toBe(1);
      expect(run.stderr).toBe('doorman: password: must not be empty\n');
      expect(run.stdout).toBe('');
    }
    const list = await admin(['list']);
    expect(list.stdout).toBe('NAME\tCREATED\tPASSWORD CHANGED\n');
  });

  it('passwd refuses a password over 1024 bytes and a bad user name (exit 1)', async () => {
    const long = await admin(['passwd', '--user', 'root'], `${'x'.repeat(1025)}\n`);
    expect(long.code).toBe(1);
    expect(long.stderr).toBe('doorman: password: must be at most 1024 bytes (UTF-8)\n');
    const badName = await admin(['passwd', '--user', 'no spaces'], 'pw\n');
    expect(badName.code).toBe(1);
    expect(badName.stderr).toMatch(/^doorman: user: "no spaces" is not allowed/);
  });

  it('lists admins without passwords or hashes, and removes them', async () => {
    await admin(['passwd', '--user', 'root'], 'pw one\n');
    await admin(['passwd', '--user', 'alice@example'], 'pw two\n');
    const list = await admin(['list']);
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines[0]).toBe('NAME\tCREATED\tPASSWORD CHANGED');
    expect(lines.slice(1).map((l) => l.split('\t')[0])).toEqual(['alice@example', 'root']);
    expect(list.stdout).not.toMatch(/scrypt|pw one|pw two/);

    expect(await admin(['remove', '--user', 'root'])).toMatchObject({
      code: 0,
      stdout: 'removed admin "root"\n',
    });
    const again = await admin(['remove', '--user', 'root']);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe('doorman: user: no admin named "root"\n');
  });

  it('never takes a password from the command line: usage errors exit 2', async () => {
    for (const args of [
      ['passwd'],
      ['passwd', '--user', 'root', 'secret-on-argv'],
      ['passwd', '--user', 'root', '--password', 'secret-on-argv'],
      ['list', '--user', 'root'],
      ['remove'],
      ['rotate'],
      [],
    ]) {
      const run = await admin(args, 'pw\n');
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/^doorman: /);
    }
    expect(storedHash('root')).toBeUndefined();
  });

  it('--help prints usage and exits 0', async () => {
    const run = await doorman(['admin', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: doorman admin passwd --user NAME/);
    expect(run.stdout).toContain('never taken from the');
  });
});
