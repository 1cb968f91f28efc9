import { spawn, execFile as execFileCb } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../lib/clock.ts';
import { openDatabase } from '../../lib/store/database.ts';
import { SessionStore } from '../../lib/store/session-store.ts';
import { ROOT } from '../harness/lab.ts';
import { buildShim, Shim } from '../harness/shim.ts';

const execFile = promisify(execFileCb);
const UNITS = ['doorman-authd.socket', 'doorman-authd.service', 'doorman.service'];
const KINDS = ['session', 'basic', 'group', 'negotiate', 'ntlm'] as const;

/**
 * The units in systemd/, for a Debian machine (checkout in /opt/doorman), checked and run as far as a machine
 * without systemd as PID 1 allows: `systemd-analyze verify` on copies whose /opt/doorman paths point at this
 * checkout, and authd's own ExecStart under `systemd-socket-activate`, which passes the sockets as systemd
 * does (LISTEN_FDS), with a datagram listener standing in for systemd's NOTIFY_SOCKET.
 */
let dir: string;
const cleanups: Array<() => void> = [];
beforeAll(buildShim);
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
  rmSync(dir, { recursive: true, force: true });
});
const freshDir = () => {
  dir = mkdtempSync(join(tmpdir(), 'doorman-units-'));
  chmodSync(dir, 0o755); // authd runs as proxy
  return dir;
};
const unit = (name: string) => readFileSync(join(ROOT, 'systemd', name), 'utf8');

describe('systemd units', () => {
  it('pass systemd-analyze verify with no warning', async () => {
    const d = freshDir();
    for (const name of UNITS)
      writeFileSync(join(d, name), unit(name).replaceAll('/opt/doorman/', `${ROOT}/`));
    const { stdout, stderr } = await execFile(
      'systemd-analyze',
      ['verify', '--man=no', ...UNITS.map((n) => `./${n}`)],
      { cwd: d },
    );
    expect(`${stdout}${stderr}`).toBe('');
  });

  it('run authd on the sockets systemd passes, answering a shim, READY=1 and WATCHDOG=1 sent', async () => {
    const d = freshDir();
    const stateDir = join(d, 'state');
    mkdirSync(stateDir, { mode: 0o700 });
    const db = openDatabase(join(stateDir, 'doorman.db'));
    new SessionStore(db, systemClock).start({
      key: { kind: 'ip', value: '10.0.0.5' },
      username: 'alice',
      source: 'api',
    });
    db.close();
    const config = join(d, 'doorman.json');
    writeFileSync(config, JSON.stringify({ stateDir }));
    const notify = join(d, 'notify');
    // systemd's side of sd_notify: one datagram per message, printed one per line.
    const listener = spawn('python3', [
      '-c',
      `import socket, os, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777)
print('bound', flush=True)
while True: print(repr(s.recv(4096).decode()), flush=True)`,
      notify,
    ]);
    cleanups.push(() => listener.kill('SIGKILL'));
    let said = '';
    listener.stdout.on('data', (c: Buffer) => (said += c.toString()));
    while (!said.includes('bound')) await new Promise((r) => setTimeout(r, 20));
    // ExecStart of doorman-authd.service, the checkout in place of /opt/doorman.
    const execStart = /^ExecStart=(.*)$/m
      .exec(unit('doorman-authd.service'))?.[1]
      ?.replaceAll('/opt/doorman/', `${ROOT}/`)
      .split(' ') as string[];
    const run = join(stateDir, 'run');
    const activate = spawn('systemd-socket-activate', [
      ...KINDS.flatMap((k) => ['-l', join(run, `${k}.sock`)]),
      `--fdname=${KINDS.join(':')}`,
      '-E',
      `NOTIFY_SOCKET=${notify}`,
      '-E',
      'WATCHDOG_USEC=400000',
      ...execStart,
      '--config',
      config,
    ]);
    cleanups.push(() => activate.kill('SIGKILL'));
    let stderr = '';
    activate.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    while (!stderr.includes(`Listening on ${join(run, 'ntlm.sock')}`))
      await new Promise((r) => setTimeout(r, 20));
    // systemd-socket-activate starts authd on the first connection, as a socket unit does.
    const shim = new Shim(join(run, 'session.sock'), true);
    cleanups.push(() => shim.kill());
    expect(await shim.ask('1 10.0.0.5 -')).toBe('1 OK user=alice');
    expect(await shim.ask('2 10.0.0.6 -')).toBe('2 ERR');
    while (!said.includes("'WATCHDOG=1'")) await new Promise((r) => setTimeout(r, 20));
    expect(said).toMatch(/'READY=1\\nSTATUS=answering on 5 sockets\\nMAINPID=\d+'/);
    expect(stderr).toMatch(/listening in .* \(sockets from systemd\)/);
    const exited = new Promise((resolve) => activate.once('exit', resolve));
    activate.kill('SIGTERM');
    await exited;
    expect(stderr).toMatch(/SIGTERM: stopping/);
    expect(said).toContain("'STOPPING=1'");
  });
});
