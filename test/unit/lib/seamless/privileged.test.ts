import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../../lib/config/load.ts';
import type { SeamlessStep } from '../../../../lib/seamless/control.ts';
import {
  type PrivilegedSeamless,
  recheckSettings,
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

  it('refuses calls once closed, saying why', async () => {
    await privileged.close();
    await expect(privileged.control.status()).rejects.toThrow(/privileged seamless process is not running/);
  });
});

describe('recheckSettings (the root child believes only what the dialogue would accept)', () => {
  const good = () => {
    const parsed = parseSeamlessSettings({
      serverVersion: '2016',
      domain: 'example.test',
      netbiosDomain: 'example',
      adminUser: 'EXAMPLE\\Administrator',
      adminPassword: 'Adm1n-Secret!',
    });
    if (!parsed.ok) throw new Error('settings');
    return parsed;
  };

  it('gives back the same settings for every form of the administrator name', () => {
    for (const adminUser of ['Administrator', 'EXAMPLE\\Administrator', 'Administrator@EXAMPLE.TEST']) {
      const parsed = parseSeamlessSettings({
        serverVersion: '2008',
        domain: 'example.test',
        adminUser,
        adminPassword: 'pw',
      });
      if (!parsed.ok) throw new Error(adminUser);
      expect(recheckSettings(parsed.settings, parsed.password)).toEqual(parsed.settings);
    }
  });

  it('refuses what the dialogue refuses: line breaks for smb.conf or net, an unknown version, a realm of its own', () => {
    const { settings, password } = good();
    expect(() => recheckSettings({ ...settings, domain: 'example.test\n[global]' }, password)).toThrow(
      /refused settings: domain/,
    );
    expect(() =>
      recheckSettings({ ...settings, adminUser: { account: 'admin\nx', form: 'short' } }, password),
    ).toThrow(/refused settings: adminUser/);
    expect(() => recheckSettings({ ...settings, realm: 'OTHER.TEST' }, password)).toThrow(/realm/);
    expect(() => recheckSettings({ ...settings, serverVersion: '1999' as '2003' }, password)).toThrow(
      /serverVersion/,
    );
  });
});
