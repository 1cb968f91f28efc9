import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../lib/store/database.ts';
import { applyDirectory } from '../harness/apply-directory.ts';
import { run, type RunOptions } from '../harness/run.ts';
import { startSlapd, type Slapd } from '../harness/slapd.ts';

const DOORMAN = join(import.meta.dirname, '..', '..', 'bin', 'doorman');

/**
 * `doorman directory set` against a real OpenLDAP leaves settings.saved in the trail as the admin screen's
 * Save & apply does: by the CLI user, with what changed, the bind password named as given and never shown.
 */
let slapd: Slapd;
let dir: string;
let config: string;
beforeAll(async () => {
  slapd = await startSlapd();
  dir = mkdtempSync(join(tmpdir(), 'doorman-directory-audit-'));
  config = join(dir, 'doorman.json');
  writeFileSync(config, JSON.stringify({ stateDir: join(dir, 'state'), serviceUser: 'root' }));
}, 60_000);
afterAll(async () => {
  await slapd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const doorman = (args: readonly string[], options?: RunOptions) =>
  run(DOORMAN, [...args, '--config', config], options);

describe('doorman directory set: the audit trail', () => {
  it('records settings.saved with what changed, the bind password redacted', async () => {
    expect((await applyDirectory(doorman, slapd)).stdout).toMatch(/Found \d+ user groups/);
    await applyDirectory(doorman, slapd, ['--timeout', '4000']);
    const db = openDatabase(join(dir, 'state', 'doorman.db'), { mustExist: true });
    const rows = db.prepare('SELECT kind, actor, detail FROM audit_events ORDER BY id').all() as {
      kind: string;
      actor: string;
      detail: string;
    }[];
    db.close();
    expect(rows.map((r) => [r.kind, r.actor.startsWith('cli:')])).toEqual([
      ['settings.saved', true],
      ['settings.saved', true],
    ]);
    const [first, second] = rows.map((r) => JSON.parse(r.detail) as { settings: string; changes: object });
    expect(first?.settings).toBe('directory');
    expect(first?.changes).toMatchObject({
      host: { from: null, to: slapd.host },
      bindPassword: '[redacted]',
    });
    expect(second?.changes).toEqual({
      timeoutMs: { from: expect.any(Number), to: 4000 },
      bindPassword: '[redacted]',
    });
    expect(rows.map((r) => r.detail).join('\n')).not.toContain(slapd.bindPassword);
  });
});
