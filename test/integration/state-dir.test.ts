import { execFile as execFileCb, execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ensureProxyKey } from '../../lib/security/proxy-key.ts';
import { http } from '../harness/http.ts';
import { ROOT, requireSystem } from '../harness/lab.ts';
import { freePort, start, waitForPort, type Started } from '../harness/processes.ts';

/**
 * What the service user meets on disk, with real processes run as root: a stateDir it cannot reach (a parent of
 * mode 0700 owned by root) and a standalone Squid directory that is not root's own or holds links.
 */
const execFile = promisify(execFileCb);
const DOORMAN = join(ROOT, 'bin', 'doorman');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function doorman(...args: string[]): Promise<Run> {
  try {
    const { stdout, stderr } = await execFile(DOORMAN, args, { encoding: 'utf8' });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

let dir: string;
let proxy: { uid: number; gid: number };
beforeAll(() => {
  requireSystem();
  dir = mkdtempSync(join(tmpdir(), 'doorman-statedir-'));
  chmodSync(dir, 0o755);
  proxy = {
    uid: Number(execFileSync('id', ['-u', 'proxy'], { encoding: 'utf8' })),
    gid: Number(execFileSync('id', ['-g', 'proxy'], { encoding: 'utf8' })),
  };
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A config whose stateDir lies under `locked/`, a directory of mode 0700 owned by root. */
function lockedSetup(name: string, extra: object = {}): { locked: string; stateDir: string; config: string } {
  const locked = join(dir, name, 'locked');
  mkdirSync(locked, { recursive: true, mode: 0o700 });
  chmodSync(join(dir, name), 0o755);
  chmodSync(locked, 0o700);
  const stateDir = join(locked, 'state');
  const config = join(dir, name, 'doorman.json');
  writeFileSync(config, JSON.stringify({ stateDir, ...extra }), { mode: 0o644 });
  return { locked, stateDir, config };
}

describe('a stateDir the service user cannot reach', () => {
  let serve: Started | undefined;
  afterEach(async () => {
    await serve?.stop();
    serve = undefined;
  });

  it('api-key create says which directory does not let the service user in', async () => {
    const { locked, stateDir, config } = lockedSetup('cli');
    const run = await doorman('api-key', 'create', '--name', 'x', '--config', config);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).not.toMatch(/does not exist/);
    expect(run.stderr).toContain(
      `doorman: stateDir: ${stateDir} cannot be reached by user proxy (uid ${proxy.uid}): ${locked} (mode 0700, owner uid 0) does not let it in`,
    );
  });

  it('serve stays up, answers a JSON 503 saying why, and opens the DB once it can be reached', async () => {
    const port = await freePort();
    const { locked, config } = lockedSetup('serve', { listen: [{ host: '127.0.0.1', port }] });
    serve = start(DOORMAN, ['serve', '--config', config]);
    await waitForPort('127.0.0.1', port, 10_000, serve.child);
    const login = () =>
      http(`http://127.0.0.1:${port}/api/login/`, {
        method: 'POST',
        from: '127.0.0.2',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'api_key=wrong&username=alice',
      });

    const refused = await login();
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    const body = JSON.parse(refused.body) as { ok: boolean; error: string; message: string };
    expect(body).toMatchObject({ ok: false, error: 'service_unavailable' });
    expect(body.message).toMatch(
      new RegExp(
        `^the session DB cannot be opened: stateDir: .* cannot be reached by user proxy .*: ${locked} `,
      ),
    );
    expect(serve.child.exitCode).toBeNull();

    // The operator fixes the parent: a later request finds the DB (a wrong key is now a plain 401).
    chmodSync(locked, 0o755);
    let reply = await login();
    for (let i = 0; i < 100 && reply.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 100));
      reply = await login();
    }
    expect(reply.status).toBe(401);
    expect(JSON.parse(reply.body)).toMatchObject({ ok: false, error: 'invalid_api_key' });
    expect(serve.stderr()).toMatch(/session DB unavailable, answering 503 until it opens: stateDir: /);
    // Log lines leave within a turn of the event loop: wait for them rather than for a time.
    for (let i = 0; i < 100 && !serve.stderr().includes('session DB opened'); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(serve.stderr()).toMatch(/session DB opened: serving again/);
  });
});

describe('squid-conf --standalone as root', () => {
  const standalone = (target: string) =>
    doorman(
      'squid-conf',
      '--standalone',
      target,
      '--port',
      '127.0.0.1:3999',
      '--config',
      join(dir, 'sq.json'),
    );
  beforeAll(() => {
    mkdirSync(join(dir, 'sq-state'), { mode: 0o700 });
    // What "doorman serve" would have made: the include carries it.
    ensureProxyKey(join(dir, 'sq-state', 'proxy-key'));
    writeFileSync(join(dir, 'sq.json'), JSON.stringify({ stateDir: join(dir, 'sq-state') }));
  });

  it('writes into a fresh directory of its own', async () => {
    const target = join(dir, 'sq-fresh');
    const run = await standalone(target);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe(join(target, 'squid.conf'));
    expect(statSync(join(target, 'logs')).uid).toBe(proxy.uid);
  });

  it('refuses a directory another user owns', async () => {
    const target = join(dir, 'sq-theirs');
    mkdirSync(target, { mode: 0o755 });
    chownSync(target, proxy.uid, proxy.gid);
    const run = await standalone(target);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`--standalone: ${target} belongs to uid ${proxy.uid}, not root`);
  });

  it('does not follow a link planted as logs/ (it would give the target to Squid’s user)', async () => {
    const target = join(dir, 'sq-logs-link');
    const precious = join(dir, 'precious-dir');
    mkdirSync(target, { mode: 0o755 });
    mkdirSync(precious, { mode: 0o700 });
    symlinkSync(precious, join(target, 'logs'));
    const run = await standalone(target);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${join(target, 'logs')} is not a directory (a symbolic link?)`);
    expect(statSync(precious).uid).toBe(0);
  });

  it('does not follow a link planted as squid.conf or doorman.conf (it would overwrite the target)', async () => {
    for (const name of ['squid.conf', 'doorman.conf']) {
      const target = join(dir, `sq-file-link-${name}`);
      const precious = join(dir, `precious-${name}`);
      mkdirSync(target, { mode: 0o755 });
      writeFileSync(precious, 'root only\n', { mode: 0o600 });
      symlinkSync(precious, join(target, name));
      const run = await standalone(target);
      expect(run.code, name).toBe(1);
      expect(run.stderr).toContain(`${join(target, name)} is a symbolic link; refusing to use it`);
      expect(readFileSync(precious, 'utf8')).toBe('root only\n');
    }
  });

  it('does not follow a link in a directory above DIR, nor use one that another user may change', async () => {
    // the service user's own directory, holding a link to a directory of root's
    const theirs = join(dir, 'sq-their-parent');
    const precious = join(dir, 'precious-parent');
    mkdirSync(theirs, { mode: 0o755 });
    mkdirSync(join(precious, 'etc-squid'), { recursive: true, mode: 0o755 });
    writeFileSync(join(precious, 'etc-squid', 'squid.conf'), 'root only\n', { mode: 0o644 });
    chownSync(theirs, proxy.uid, proxy.gid);
    symlinkSync(precious, join(theirs, 'a'));
    const viaLink = await standalone(join(theirs, 'a', 'etc-squid'));
    expect(viaLink.code).toBe(1);
    expect(viaLink.stderr).toContain('has a symbolic link in its path');
    expect(readFileSync(join(precious, 'etc-squid', 'squid.conf'), 'utf8')).toBe('root only\n');
    // no link, but a parent the service user may rename things in
    const inside = await standalone(join(theirs, 'sub'));
    expect(inside.code).toBe(1);
    expect(inside.stderr).toContain(`${theirs}, above ${join(theirs, 'sub')}, may be changed by others`);
  });
});
