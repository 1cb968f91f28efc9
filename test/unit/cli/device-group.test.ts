import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { deviceGroupCommand } from '../../../cli/commands/device-group.ts';
import { openDatabase } from '../../../lib/store/database.ts';
import { useTempDir } from '../../support/temp-dir.ts';

/**
 * `doorman device-group` run in this process on a session DB of its own. The config names root as the service
 * user, so the command's switch to the service user (it runs as root here) changes nothing.
 */
const tmp = useTempDir('doorman-cli-device-group-');
let config = '';
beforeEach(() => {
  config = tmp.write(
    'doorman.json',
    JSON.stringify({ stateDir: join(tmp.dir, 'state'), serviceUser: 'root' }),
  );
  vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
});
afterEach(() => {
  vi.restoreAllMocks();
});

const run = (...argv: string[]) => deviceGroupCommand.run([...argv, '--config', config]);

describe('doorman device-group: the audit trail', () => {
  it('records each add, change and removal as settings.saved by the CLI user, with what changed', async () => {
    expect(await run('add', '--name', 'Guests', '--cidr', '10.20.0.0/16')).toBe(0);
    expect(await run('set', '--name', 'Guests', '--inactive')).toBe(0);
    expect(await run('remove', '--name', 'Guests')).toBe(0);
    const db = openDatabase(join(tmp.dir, 'state', 'doorman.db'), { mustExist: true });
    const rows = db.prepare('SELECT kind, actor, detail FROM audit_events ORDER BY id').all() as {
      kind: string;
      actor: string;
      detail: string;
    }[];
    db.close();
    // The detail is the admin screen's own (test/unit/portal/admin/audit.test.ts shows each in full).
    const details = rows.map((r) => JSON.parse(r.detail) as Record<string, unknown>);
    expect(rows.map((r) => [r.kind, r.actor.startsWith('cli:')])).toEqual(
      Array.from({ length: 3 }, () => ['settings.saved', true]),
    );
    expect(details.map((d) => [d['settings'], d['action'], d['group']])).toEqual([
      ['device-group', 'added', 'Guests'],
      ['device-group', 'changed', 'Guests'],
      ['device-group', 'removed', 'Guests'],
    ]);
    expect(details[0]?.['changes']).toMatchObject({ cidrs: { from: null, to: '10.20.0.0/16' } });
    expect(details[1]?.['changes']).toEqual({ active: { from: true, to: false } });
    expect(details[2]?.['changes']).toMatchObject({ name: { from: 'Guests', to: null } });
  });
});
