import { describe, expect, it } from 'vitest';
import { recheckSettings } from '../../../../lib/seamless/recheck.ts';
import { parseSeamlessSettings } from '../../../../lib/seamless/settings.ts';

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
