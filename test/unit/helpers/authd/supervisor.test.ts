import { chmodSync, readFileSync, readlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../lib/config/load.ts';
import type { Config } from '../../../../lib/config/schema.ts';
import { runDir, seamlessPaths } from '../../../../lib/seamless/paths.ts';
import { pidFilePath, runningAuthd } from '../../../../helpers/authd/pid-file.ts';
import { authdLogPath, superviseAuthd, type AuthdSupervisor } from '../../../../helpers/authd/supervisor.ts';
import { useTempDir } from '../../../support/temp-dir.ts';

/**
 * The supervisor against the real, compiled authd (npm run build): started detached, found again by a second
 * supervisor, restarted when killed, replaced when stopped (SIGSTOP). Short intervals and deadlines stand in
 * for serve's 1 s and 5 s.
 */
describe('superviseAuthd', { timeout: 20_000 }, () => {
  const tmp = useTempDir('doorman-supervisor-');
  const supervisors: AuthdSupervisor[] = [];
  const pids = new Set<number>();
  let config: Config;
  afterEach(async () => {
    for (const s of supervisors.splice(0)) await s.stop();
    const running = config === undefined ? undefined : runningAuthd(pidFilePath(runDir(config.stateDir)));
    for (const pid of [...pids, ...(running === undefined ? [] : [running])]) {
      try {
        process.kill(pid, 'SIGCONT');
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    pids.clear();
  });
  const supervise = (lines: string[], overrides: { deadlineMs?: number } = {}) => {
    // The helper user (authd drops to it as root) must reach stateDir.
    chmodSync(tmp.dir, 0o755);
    const input = { stateDir: join(tmp.dir, 'state') };
    config = parseConfig(input, 'test');
    const s = superviseAuthd({
      config,
      configFile: tmp.write('doorman.json', JSON.stringify(input)),
      log: (line) => lines.push(line),
      intervalMs: 100,
      backoffMs: { first: 100, max: 400 },
      ...overrides,
    });
    supervisors.push(s);
    return s;
  };
  const until = async <T>(get: () => T | undefined): Promise<T> => {
    for (;;) {
      const value = get();
      if (value !== undefined) return value;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const pidFile = () => pidFilePath(runDir(config.stateDir));
  /** The authd the pid file names once it is another than `first`. */
  const nextAuthd = (first: number) =>
    until(() => {
      const pid = runningAuthd(pidFile());
      return pid !== undefined && pid !== first ? pid : undefined;
    });

  it('starts authd in a session of its own, with the Kerberos environment, and leaves it running when stopped', async () => {
    const lines: string[] = [];
    const s = supervise(lines);
    const pid = await s.answering();
    expect(pid).toBeGreaterThan(0);
    pids.add(pid as number);
    // Field 6 of /proc/PID/stat is the session id: its own, not this test's.
    const session = Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[3]);
    expect(session).toBe(pid);
    const environ = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');
    expect(environ).toContain(`KRB5_KTNAME=FILE:${seamlessPaths(config).keytab}`);
    expect(environ).toContain(`KRB5RCACHEDIR=${seamlessPaths(config).rcacheDir}`);
    await s.stop();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(runningAuthd(pidFile())).toBe(pid);
    expect(lines).toContain(
      `authd started (pid ${pid}), in a session of its own; its log: ${authdLogPath(config.stateDir)}`,
    );
    // It logs to a file of its own and holds nothing of its starter's output: a reader of serve's stderr sees
    // it end when serve ends.
    expect(readFileSync(authdLogPath(config.stateDir), 'utf8')).toMatch(/doorman-authd\[\d+\]: /);
    expect(readlinkSync(`/proc/${pid}/fd/2`)).not.toBe(readlinkSync('/proc/self/fd/2'));
  });

  it('uses the authd that answers instead of starting a second', async () => {
    const first = await supervise([]).answering();
    pids.add(first as number);
    await supervisors[0]?.stop();
    const lines: string[] = [];
    const second = await supervise(lines).answering();
    expect(second).toBe(first);
    expect(lines.filter((l) => l.startsWith('authd started'))).toEqual([]);
  });

  it('starts another when authd is killed', async () => {
    const lines: string[] = [];
    const s = supervise(lines);
    const first = (await s.answering()) as number;
    pids.add(first);
    process.kill(first, 'SIGKILL');
    const second = await nextAuthd(first);
    pids.add(second);
    expect(lines.some((l) => /^authd not answering: .*session\.sock: ECONNREFUSED/.test(l))).toBe(true);
  });

  it('leaves an authd that is stopping (SIGTERM, answering what it owes) to end by itself, then starts another', async () => {
    const lines: string[] = [];
    const s = supervise(lines, { deadlineMs: 500 });
    const first = (await s.answering()) as number;
    pids.add(first);
    // A client that asks and never reads keeps authd answering for its grace (5 s) after SIGTERM.
    const held = connect(join(config.stateDir, 'run', 'session.sock'));
    // authd, once its grace is over, may reset this connection: that is the point, not a failure.
    held.on('error', () => undefined);
    await new Promise((resolve) => held.once('connect', resolve));
    held.write('1 10.0.0.1 -\n');
    held.pause();
    process.kill(first, 'SIGTERM');
    const second = await nextAuthd(first);
    pids.add(second);
    held.destroy();
    expect(lines.filter((l) => l.includes('SIGKILL'))).toEqual([]);
    expect(lines).toContain(`authd (pid ${first}) exited (code 0)`);
  });

  it('kills an authd that is alive but does not answer (SIGSTOP) and starts another', async () => {
    const lines: string[] = [];
    const s = supervise(lines, { deadlineMs: 500 });
    const first = (await s.answering()) as number;
    pids.add(first);
    process.kill(first, 'SIGSTOP');
    const second = await nextAuthd(first);
    pids.add(second);
    expect(lines).toContain(
      `authd (pid ${first}) is alive but did not answer within 500 ms: SIGKILL, and another`,
    );
    expect(() => process.kill(first, 0)).toThrow();
  });
});
