import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/clock.ts';
import { Directory, testSettings } from '../../../lib/directory/directory.ts';
import type { DirectorySettingsInput } from '../../../lib/directory/settings.ts';
import { DirectorySettingsStore } from '../../../lib/store/directory-settings-store.ts';
import { startSlapd, USER_PASSWORD, type Slapd } from '../../harness/slapd.ts';
import { useTempDb } from '../../support/temp-db.ts';

// Save & apply against a real slapd: the group count, one message per kind of mistake, and the previous
// settings still working after each.

let slapd: Slapd;
beforeAll(async () => {
  slapd = await startSlapd();
});
afterAll(() => slapd?.stop());

const tmp = useTempDb('doorman-apply-');
const options = { test: (s: Parameters<typeof testSettings>[0], p: string) => testSettings(s, p) };

const input = (over: Partial<DirectorySettingsInput> = {}): DirectorySettingsInput => ({
  kind: 'open-directory',
  host: 'ldap.example.test',
  address: '127.0.0.1',
  port: slapd.port,
  transport: 'starttls',
  caCertificate: slapd.caPem,
  baseDn: slapd.baseDn,
  bindDn: slapd.bindDn,
  connectTimeoutMs: 2000,
  ...over,
});

describe('Save & apply', () => {
  it('reports "Found 9 user groups"; each mistake gets its own message and changes nothing', async () => {
    const store = new DirectorySettingsStore(tmp.connect(), {
      passwordFile: join(tmp.dir, 'directory-bind-password'),
      clock: new ManualClock(),
    });
    expect(await store.apply(input(), slapd.bindPassword, options)).toMatchObject({
      ok: true,
      groupCount: 9,
      message: 'Found 9 user groups',
    });
    const applied = store.load();
    const version = store.version();

    // another server: the password must be given again (it is not sent anywhere new on its own)
    const badHost = await store.apply(
      input({ host: 'no-such-host.invalid', address: undefined }),
      slapd.bindPassword,
      options,
    );
    const badPassword = await store.apply(input(), 'not-the-password', options);
    const badBase = await store.apply(input({ baseDn: 'dc=nope,dc=test' }), undefined, options);
    const badField = await store.apply(input({ port: 0 }), undefined, options);
    expect(badHost).toMatchObject({ ok: false, error: { code: 'UNREACHABLE' } });
    expect(badHost.message).toMatch(/^cannot reach no-such-host\.invalid:\d+: /);
    expect(badPassword).toMatchObject({ ok: false, error: { code: 'INVALID_CREDENTIALS' } });
    expect(badPassword.message).toMatch(/refused the bind as "cn=squid,ou=services,dc=example,dc=test"/);
    expect(badPassword.message).not.toContain('not-the-password');
    expect(badBase).toMatchObject({ ok: false, error: { code: 'NO_SUCH_BASE' } });
    expect(badBase.message).toMatch(/^the search base "dc=nope,dc=test" does not exist/);
    expect(badField).toMatchObject({ ok: false, problems: [{ field: 'port' }] });
    expect(new Set([badHost.message, badPassword.message, badBase.message, badField.message]).size).toBe(4);

    // The applied settings are as they were, and they still work.
    expect(store.load()).toEqual(applied);
    expect(store.version()).toBe(version);
    const { settings, password } = store.load() ?? { settings: undefined, password: '' };
    if (settings === undefined) throw new Error('no settings');
    const directory = new Directory(settings, password, { clock: new ManualClock(), log: () => {} });
    try {
      expect(await directory.checkPassword('alice', USER_PASSWORD)).toMatchObject({
        ok: true,
        user: 'alice',
      });
    } finally {
      await directory.close();
    }
  });
});
