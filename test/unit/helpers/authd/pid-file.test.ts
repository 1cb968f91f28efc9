import { spawn } from 'node:child_process';
import { chownSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { pidFilePath, readPidFile, runningAuthd } from '../../../../helpers/authd/pid-file.ts';
import { lookupUser } from '../../../../lib/system/service-user.ts';
import { useTempDir } from '../../../support/temp-dir.ts';

const tmp = useTempDir('doorman-pid-file-');
const started: number[] = [];
afterEach(() => {
  for (const pid of started.splice(0)) process.kill(pid, 'SIGKILL');
});

/** A root process (these tests run as root) whose command line looks like authd's, once it has exec'd. */
async function lookalike(): Promise<number> {
  const child = spawn(
    'python3',
    ['-c', 'import time; time.sleep(30)', join(tmp.dir, 'helpers/authd/main.js')],
    {
      stdio: 'ignore',
    },
  );
  const pid = child.pid as number;
  started.push(pid);
  // Until exec, /proc/PID/cmdline is still the forking Node's.
  while (!readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes('helpers/authd/main.js')) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return pid;
}

describe('the authd pid file', () => {
  it('names a live authd of the user who wrote the file', async () => {
    const pid = await lookalike();
    const path = pidFilePath(tmp.dir);
    writeFileSync(path, `${pid}\n`);
    expect(readPidFile(path)).toBe(pid);
    // Once in a full CI run the look-alike was not yet believed right after its exec was seen (its /proc
    // entries settling on a loaded machine): believed within a moment is what is asserted.
    await vi.waitFor(() => expect(runningAuthd(path)).toBe(pid), { timeout: 2000 });
  });

  it('is not believed for a process of another user: the service user cannot make root signal root’s', async () => {
    const pid = await lookalike();
    const path = pidFilePath(tmp.dir);
    writeFileSync(path, `${pid}\n`);
    const proxy = lookupUser('proxy');
    chownSync(path, proxy.uid, proxy.gid); // as proxy, who owns the run directory, could write it
    expect(readPidFile(path)).toBe(pid);
    expect(runningAuthd(path)).toBeUndefined();
  });

  it('is not believed for a process that is no authd, or a file that holds no pid', () => {
    const path = pidFilePath(tmp.dir);
    writeFileSync(path, `${process.pid}\n`);
    expect(runningAuthd(path)).toBeUndefined();
    writeFileSync(path, 'x'.repeat(100));
    expect(readPidFile(path)).toBeUndefined();
  });
});
