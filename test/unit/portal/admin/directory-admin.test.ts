import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { DirectoryError } from '../../../../lib/directory/errors.ts';
import { DirectorySettingsStore } from '../../../../lib/store/directory-settings-store.ts';
import { directoryAdminFrom } from '../../../../portal/admin/directory-admin.ts';
import { useTempDb } from '../../../support/temp-db.ts';

const tmp = useTempDb('doorman-directory-admin-');
const INPUT = {
  kind: 'open-directory',
  host: 'ldap.example.test',
  baseDn: 'dc=example,dc=test',
  bindDn: 'uid=squid,cn=users,dc=example,dc=test',
};

describe('directoryAdminFrom (the real settings store behind the admin screens)', () => {
  it('reports whether a password is stored, never the password; a blank one keeps it', async () => {
    const store = new DirectorySettingsStore(tmp.connect(), {
      passwordFile: join(tmp.dir, 'bind-password'),
      clock: new ManualClock(),
    });
    const tested: string[] = [];
    const admin = directoryAdminFrom(store, {
      test: async (_settings, password) => {
        tested.push(password);
        return { ok: true, groupCount: 7 };
      },
    });
    expect(admin.current()).toBeUndefined();
    expect(await admin.apply(INPUT, 'bind secret')).toMatchObject({ ok: true, groupCount: 7 });
    const current = admin.current();
    expect(current).toEqual({
      settings: expect.objectContaining({ host: 'ldap.example.test' }),
      hasPassword: true,
    });
    expect(JSON.stringify(current)).not.toContain('bind secret');
    expect(await admin.apply({ ...INPUT, baseDn: 'dc=example,dc=org' }, undefined)).toMatchObject({
      ok: true,
    });
    expect(tested).toEqual(['bind secret', 'bind secret']);
    expect(admin.current()?.settings.baseDn).toBe('dc=example,dc=org');
  });

  it('wants the password again before sending it to another server or as another account', async () => {
    const store = new DirectorySettingsStore(tmp.connect(), {
      passwordFile: join(tmp.dir, 'bind-password'),
      clock: new ManualClock(),
    });
    const tested: string[] = [];
    const admin = directoryAdminFrom(store, {
      test: async (_settings, password) => {
        tested.push(password);
        return { ok: true, groupCount: 7 };
      },
    });
    await admin.apply({ ...INPUT, baseDn: 'dc=example,dc=test' }, 'bind secret');
    for (const change of [
      { host: 'attacker.example.test' },
      { transport: 'plain' },
      { port: 3389 },
      { address: '192.0.2.7' },
      { bindDn: 'uid=other,cn=users,dc=example,dc=test' },
    ]) {
      expect(await admin.apply({ ...INPUT, ...change }, undefined), JSON.stringify(change)).toMatchObject({
        ok: false,
        problems: [{ field: 'password', message: expect.stringMatching(/required again/) }],
      });
    }
    expect(tested).toEqual(['bind secret']);
    expect(admin.current()?.settings.host).toBe('ldap.example.test');
  });

  it('passes field problems and directory errors through unchanged, and keeps the old settings', async () => {
    const store = new DirectorySettingsStore(tmp.connect(), {
      passwordFile: join(tmp.dir, 'bind-password'),
      clock: new ManualClock(),
    });
    let fail = false;
    const admin = directoryAdminFrom(store, {
      test: async () => {
        if (!fail) return { ok: true, groupCount: 1 };
        return { ok: false, error: new DirectoryError('UNREACHABLE', 'cannot reach ldap9.example.test:636') };
      },
    });
    await admin.apply(INPUT, 'pw');
    const problems = await admin.apply({ ...INPUT, baseDn: 'ou=x' }, undefined);
    expect(problems).toMatchObject({ ok: false, problems: [{ field: 'baseDn' }] });
    fail = true;
    const failed = await admin.apply({ ...INPUT, host: 'ldap9.example.test' }, 'pw');
    expect(failed).toMatchObject({
      ok: false,
      error: { code: 'UNREACHABLE', message: 'cannot reach ldap9.example.test:636' },
    });
    expect(admin.current()?.settings.host).toBe('ldap.example.test');
  });
});
