import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../lib/config/load.ts';
import type { SeamlessStep } from '../../../../lib/seamless/control.ts';
import {
  type PrivilegedSeamless,
  resumeAtStart,
  startPrivilegedSeamless,
} from '../../../../lib/seamless/privileged.ts';
import { parseSeamlessSettings } from '../../../../lib/seamless/settings.ts';
import { useTempDir } from '../../../support/temp-dir.ts';

/**
 * serve's privileged child, over its real IPC channel: a state directory with no directory applied, so every
 * operation answers without touching a domain. (The join itself: test/integration/seamless-join.e2e.test.ts.)
 */
const tmp = useTempDir('doorman-privileged-');
let privileged: PrivilegedSeamless;

beforeEach(() => {
  chmodSync(tmp.dir, 0o755); // the service user opens the DB in here when this runs as root
  privileged = startPrivilegedSeamless(parseConfig({ stateDir: join(tmp.dir, 'state') }, 'test'));
});
afterEach(async () => {
  await privileged.close();
});

describe('startPrivilegedSeamless', () => {
  it('answers status and the doctor from the child', async () => {
    const status = await privileged.control.status();
    expect(status).toEqual({
      availability: {
        ok: false,
        code: 'NO_DIRECTORY',
        reason: expect.stringContaining('no directory service'),
      },
    });
    const report = await privileged.control.doctor();
    expect(report).toMatchObject({ ok: false, checks: [] });
  });

  it('resumes in the child: skipped while the proxy is not joined, with or without an smb.conf', async () => {
    const notEnabled = {
      ok: true,
      skipped: true,
      detail: 'seamless authentication is not enabled: nothing to start',
    };
    // No smb.conf: answered before the child loads its machinery (serve asks at every start).
    expect(await privileged.control.resume()).toEqual(notEnabled);
    // An smb.conf left by an Enable that failed: the child asks the store, which has nothing saved.
    mkdirSync(join(tmp.dir, 'state-samba'), { mode: 0o750 });
    writeFileSync(join(tmp.dir, 'state-samba', 'smb.conf'), '[global]\n');
    expect(await privileged.control.resume()).toEqual(notEnabled);
  });

  it('resumeAtStart logs the outcome in one line', async () => {
    const lines: string[] = [];
    await resumeAtStart(privileged.control, (line) => lines.push(line));
    await privileged.close();
    await resumeAtStart(privileged.control, (line) => lines.push(line));
    expect(lines).toEqual([
      'seamless: resume winbindd: skipped: seamless authentication is not enabled: nothing to start',
      expect.stringMatching(
        /^seamless: resume winbindd: FAILED: the privileged seamless process is not running/,
      ),
    ]);
  });

  it('streams the steps of enable back as they happen, and zeroes the password on this side', async () => {
    const parsed = parseSeamlessSettings({
      serverVersion: '2008',
      domain: 'example.test',
      adminUser: 'Administrator',
      adminPassword: 'Adm1n-Secret!',
    });
    if (!parsed.ok) throw new Error('settings');
    const steps: SeamlessStep[] = [];
    const result = await privileged.control.enable(parsed.settings, parsed.password, (s) => steps.push(s));
    expect(result).toEqual({ ok: false });
    expect(steps.map((s) => [s.id, s.status])).toEqual([
      ['preconditions', 'running'],
      ['preconditions', 'fail'],
    ]);
    expect(parsed.password.every((byte) => byte === 0)).toBe(true);
  });

  it('runs the child as compiled JavaScript from dist/, without the TypeScript stripper or the parent’s flags', async () => {
    // The root child idles for as long as serve runs: what it loads at start it costs all that time
    // (bench/idle-memory.sh). Its operations still answer (above), from the compiled file.
    const children = execFileSync('pgrep', ['-P', String(process.pid), '-f', 'seamless/privileged'], {
      encoding: 'utf8',
    })
      .trim()
      .split('\n');
    const argv = children.map((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(1, -1));
    expect(argv).toContainEqual([
      resolve(import.meta.dirname, '../../../../dist/lib/seamless/privileged.js'),
    ]);
    expect(argv.flat().some((arg) => arg.endsWith('.ts'))).toBe(false);
  });

  it('refuses calls once closed, saying why', async () => {
    await privileged.close();
    await expect(privileged.control.status()).rejects.toThrow(/privileged seamless process is not running/);
  });
});
