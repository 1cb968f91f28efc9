import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pidFilePath, runningAuthd } from '../../helpers/authd/pid-file.ts';
import { ROOT } from '../harness/lab.ts';
import { run } from '../harness/run.ts';

/**
 * authd on a PostgreSQL store that cannot be reached: it cannot answer anyone (it knows no session yet), but
 * it can be seen and stopped like any other, and leaves nothing behind.
 */
let dir: string;
let configFile: string;
const doorman = (...args: string[]) =>
  run(join(ROOT, 'bin', 'doorman'), [...args, '--config', configFile], { allowFailure: true });

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'doorman-authd-pg-'));
  chmodSync(dir, 0o755);
  configFile = join(dir, 'doorman.json');
  writeFileSync(
    configFile,
    JSON.stringify({
      stateDir: join(dir, 'state'),
      // Nothing listens on port 1.
      store: { kind: 'postgres', url: 'postgres://doorman@127.0.0.1:1/doorman' },
    }),
    { mode: 0o644 },
  );
});
afterAll(async () => {
  await doorman('authd', 'stop');
  rmSync(dir, { recursive: true, force: true });
});

describe('authd on a PostgreSQL store that cannot be reached', () => {
  it('runs, is named in its pid file, and stops on doorman authd stop', async () => {
    await doorman('authd', 'start');
    const pidFile = pidFilePath(join(dir, 'state', 'run'));
    let pid: number | undefined;
    for (let i = 0; i < 100 && pid === undefined; i++) {
      pid = runningAuthd(pidFile);
      if (pid === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(pid).toBeGreaterThan(0);
    const stopped = await doorman('authd', 'stop');
    expect(stopped.code, stopped.stderr).toBe(0);
    expect(() => process.kill(pid as number, 0)).toThrow();
  });
});
