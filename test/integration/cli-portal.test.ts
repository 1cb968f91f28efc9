import { execFile as execFileCb } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, requireSystem } from '../harness/lab.ts';

const execFile = promisify(execFileCb);

let dir: string;
let config: string;
beforeAll(() => {
  requireSystem();
  dir = mkdtempSync(join(tmpdir(), 'doorman-cli-portal-'));
  chmodSync(dir, 0o755);
  config = join(dir, 'doorman.json');
  writeFileSync(config, JSON.stringify({ stateDir: join(dir, 'state') }));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function doorman(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await execFile(join(ROOT, 'bin', 'doorman'), [...args, '--config', config], {
      encoding: 'utf8',
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('doorman portal and device-group', () => {
  it.each(['portal', 'device-group'])('%s --help prints usage and exits 0', async (name) => {
    const run = await doorman(name, '--help');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^Usage: doorman ${name}`));
    expect(run.stdout).not.toMatch(/in progress|come next/);
  });

  it('portal show prints the defaults; set lists every problem at once and saves nothing', async () => {
    expect(JSON.parse((await doorman('portal', 'show')).stdout)).toMatchObject({
      mode: 'off',
      idleTimeoutMinutes: 60,
    });
    const bad = await doorman(
      'portal',
      'set',
      '--mode',
      'agreement',
      '--idle-minutes',
      'soon',
      '--clear-date',
      '2001-01-01',
      '--walled-host',
      'bad_host',
      '--walled-cidr',
      '10.0.0.0/33',
    );
    expect(bad.code).toBe(1);
    for (const option of [
      '--idle-minutes',
      '--clear-date',
      '--walled-host',
      '--walled-cidr',
      '--policy-file',
    ]) {
      expect(bad.stderr).toContain(`${option} (`);
    }
    expect(bad.stderr).toContain('"soon"');
    expect(JSON.parse((await doorman('portal', 'show')).stdout).mode).toBe('off');
    expect((await doorman('portal', 'set')).code).toBe(2);
    expect((await doorman('portal', 'show', '--mode', 'off')).code).toBe(2);
  });

  it.each(['authentication', 'registration'])(
    'portal set --mode %s with no directory applied: refused with the reason, nothing saved',
    async (mode) => {
      const refused = await doorman('portal', 'set', '--mode', mode, '--idle-minutes', '30');
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('not saved, the settings in force stay:');
      expect(refused.stderr).toContain(
        `--mode (mode): "${mode}" signs users in with a directory account, and no directory is applied: ` +
          'apply one first (the Directory screen, or doorman directory set)',
      );
      expect(JSON.parse((await doorman('portal', 'show')).stdout)).toMatchObject({
        mode: 'off',
        idleTimeoutMinutes: 60,
      });
    },
  );

  it('portal set saves, prints what changed and reminds of clear-sessions', async () => {
    const policy = join(dir, 'policy.txt');
    writeFileSync(policy, 'Be kind.\n');
    const run = await doorman(
      'portal',
      'set',
      '--mode',
      'agreement',
      '--policy-file',
      policy,
      '--hard-minutes',
      'none',
      '--walled-host',
      'Captive.Example.com',
      '--walled-cidr',
      '192.0.2.9/24',
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('mode: off -> agreement');
    expect(run.stdout).toContain('hardTimeoutMinutes: 480 -> none');
    expect(run.stdout).toContain('doorman portal clear-sessions');
    expect(JSON.parse((await doorman('portal', 'show')).stdout)).toEqual({
      mode: 'agreement',
      idleTimeoutMinutes: 60,
      hardTimeoutMinutes: null,
      registrationClearDate: null,
      policyText: 'Be kind.\n',
      walledGarden: { hosts: ['captive.example.com'], cidrs: ['192.0.2.0/24'] },
    });
  });

  it('portal clear-sessions ends portal sessions and keeps API ones', async () => {
    const db = new Database(join(dir, 'state', 'doorman.db'));
    const insert = db.prepare(
      "INSERT INTO sessions (key_kind, key, username, source, created_at, last_seen) VALUES ('ip', ?, ?, ?, 0, 0)",
    );
    insert.run('10.0.0.1', 'scripted', 'api');
    insert.run('10.0.0.2', 'alice', 'portal');
    insert.run('10.0.0.3', 'agreement:10.0.0.3', 'agreement');
    db.close();
    const run = await doorman('portal', 'clear-sessions');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^ended 2 portal session/);
    expect((await doorman('sessions', 'list')).stdout).toMatch(/^10\.0\.0\.1\tscripted\tapi\t/m);
    expect((await doorman('sessions', 'list')).stdout).not.toContain('alice');
  });

  it('device-group add, list, set, remove', async () => {
    const added = await doorman(
      'device-group',
      'add',
      '--name',
      'Lab',
      '--cidr',
      '10.1.2.3/16',
      '--cidr',
      '2001:db8::/48',
    );
    expect(added.code).toBe(0);
    expect(added.stdout).toContain('10.1.0.0/16');
    const dup = await doorman('device-group', 'add', '--name', 'LAB', '--cidr', 'nonsense');
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain('--name (name): "LAB" is taken by the group "Lab"');
    expect(dup.stderr).toContain('--cidr (cidrs.0): "nonsense" is not');
    expect((await doorman('device-group', 'set', '--name', 'lab', '--inactive')).code).toBe(0);
    expect((await doorman('device-group', 'list')).stdout).toBe(
      'NAME\tACTIVE\tCIDRS\nLab\tno\t10.1.0.0/16,2001:db8::/48\n',
    );
    expect((await doorman('device-group', 'set', '--name', 'Lab', '--active', '--inactive')).code).toBe(2);
    expect((await doorman('device-group', 'add', '--name', 'X')).code).toBe(2);
    expect((await doorman('device-group', 'remove', '--name', 'nobody')).code).toBe(1);
    expect((await doorman('device-group', 'remove', '--name', 'Lab')).code).toBe(0);
    expect((await doorman('device-group', 'list')).stdout).toBe('NAME\tACTIVE\tCIDRS\n');
  });
});
