import { describe, expect, it } from 'vitest';
import { seamlessPaths } from '../../../../lib/seamless/paths.ts';
import {
  type ProcessControl,
  runningPid,
  stopDaemon,
  stopDaemons,
} from '../../../../lib/seamless/winbindd.ts';

const tools = { paths: seamlessPaths({ stateDir: '/state', sambaDir: null }) };

/** Processes by pid: name, and whether SIGTERM ends them. */
function processes(entries: Record<number, { name: string; stubborn?: boolean }>) {
  const table = new Map(Object.entries(entries).map(([pid, entry]) => [Number(pid), entry]));
  const signals: [number, string | number][] = [];
  const control: ProcessControl = {
    kill(pid, signal) {
      signals.push([pid, signal]);
      const entry = table.get(pid);
      if (entry === undefined) throw Object.assign(new Error('ESRCH'), { code: 'ESRCH' });
      if (signal === 'SIGKILL' || (signal === 'SIGTERM' && entry.stubborn !== true)) table.delete(pid);
    },
    name: (pid) => table.get(pid)?.name,
    sleep: async () => {},
  };
  return { control, signals };
}

const pidFiles = (files: Record<string, string>) => (file: string) => {
  const found = files[file];
  if (found === undefined) throw new Error('ENOENT');
  return found;
};

describe('stopping the member daemons by pid file', () => {
  it('SIGTERMs winbindd, then samba-dcerpcd, each by its own pid file', async () => {
    const { control, signals } = processes({ 100: { name: 'winbindd' }, 200: { name: 'samba-dcerpcd' } });
    const read = pidFiles({
      '/state-samba/run/winbindd.pid': '100\n',
      '/state-samba/run/samba-dcerpcd.pid': '200\n',
    });
    expect(await stopDaemons(tools, control, read)).toBe(
      'stopped winbindd (pid 100); stopped samba-dcerpcd (pid 200)',
    );
    expect(signals.filter(([, s]) => s !== 0)).toEqual([
      [100, 'SIGTERM'],
      [200, 'SIGTERM'],
    ]);
  });

  it('leaves a reused pid alone: only a process of the daemon’s name is ours', async () => {
    const { control, signals } = processes({ 100: { name: 'sshd' } });
    const read = pidFiles({ '/state-samba/run/winbindd.pid': '100' });
    expect(runningPid(tools, 'winbindd', control, read)).toBeUndefined();
    expect(await stopDaemon(tools, 'winbindd', control, read)).toBe('winbindd was not running');
    expect(signals).toEqual([]);
  });

  it('kills a daemon that ignores SIGTERM for 5 s', async () => {
    const { control, signals } = processes({ 100: { name: 'winbindd', stubborn: true } });
    const read = pidFiles({ '/state-samba/run/winbindd.pid': '100' });
    expect(await stopDaemon(tools, 'winbindd', control, read)).toMatch(/^killed winbindd \(pid 100\)/);
    expect(signals.at(-1)).toEqual([100, 'SIGKILL']);
  });

  it('reads garbage, a missing file or pid 1 as not running', () => {
    const { control } = processes({ 1: { name: 'winbindd' } });
    for (const text of ['', 'abc', '1', '-5', '12abc']) {
      expect(
        runningPid(tools, 'winbindd', control, pidFiles({ '/state-samba/run/winbindd.pid': text })),
      ).toBeUndefined();
    }
    expect(runningPid(tools, 'winbindd', control, pidFiles({}))).toBeUndefined();
  });
});
