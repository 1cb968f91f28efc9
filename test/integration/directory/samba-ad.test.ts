import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/clock.ts';
import { Directory, testSettings } from '../../../lib/directory/directory.ts';
import {
  directorySettingsSchema,
  type DirectorySettings,
  type DirectorySettingsInput,
} from '../../../lib/directory/settings.ts';
import { run } from '../../harness/run.ts';
import { startSambaAd, type SambaAd } from '../../harness/samba-ad.ts';

// The directory library against a real Samba AD DC: display-name DNs, the three login forms, nested and
// primary groups, AD's bind sub-codes, and the group count Save & apply reports.

let ad: SambaAd;
beforeAll(async () => {
  ad = await startSambaAd();
}, 120_000);
afterAll(() => ad?.stop(), 60_000);

const open: Directory[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((d) => d.close()));
});

const PASSWORD = 'Passw0rd!';

/** LDAPS to the DC's address, the certificate checked against dc1.example.test with the test CA. */
function settings(over: Partial<DirectorySettingsInput> = {}): DirectorySettings {
  return directorySettingsSchema.parse({
    kind: 'active-directory',
    host: 'dc1.example.test',
    address: ad.host,
    transport: 'ldaps',
    caCertificate: ad.caPem,
    baseDn: ad.baseDn,
    bindDn: ad.bindDn,
    ...over,
  });
}

function directory(over: Partial<DirectorySettingsInput> = {}, clock = new ManualClock()): Directory {
  const d = new Directory(settings(over), ad.bindPassword, { clock, log: () => {} });
  open.push(d);
  return d;
}

const names = (groups: readonly { name: string }[] | undefined) => (groups ?? []).map((g) => g.name).sort();

/** The groups under the base, counted by OpenLDAP's ldapsearch with paging: what Save & apply must say. */
async function groupCountByLdapsearch(): Promise<number> {
  const { stdout } = await run(
    'ldapsearch',
    ['-x', '-LLL', '-H', ad.ldapsUrl, '-D', ad.bindDn, '-w', ad.bindPassword, '-b', ad.baseDn].concat([
      '-E',
      'pr=200/noprompt',
      '(objectClass=group)',
      '1.1',
    ]),
    { env: { ...process.env, LDAPTLS_CACERT: ad.caFile } },
  );
  return stdout.split('\n').filter((line) => line.startsWith('dn: ') || line.startsWith('dn:: ')).length;
}

/** Whether the DC takes a simple bind with these credentials (ldapsearch of the root DSE: exit 0 or 49). */
async function simpleBind(dn: string, password: string): Promise<boolean> {
  const { code } = await run(
    'ldapsearch',
    ['-x', '-H', ad.ldapsUrl, '-D', dn, '-w', password, '-s', 'base', '-b', '', '1.1'],
    { env: { ...process.env, LDAPTLS_CACERT: ad.caFile }, allowFailure: true },
  );
  return code === 0;
}

describe('Save & apply against AD', () => {
  it('reports the number of groups under the base, over LDAPS, StartTLS and plain LDAP', async () => {
    const expected = await groupCountByLdapsearch();
    expect(expected).toBeGreaterThan(5);
    expect(await testSettings(settings(), ad.bindPassword)).toEqual({ ok: true, groupCount: expected });
    expect(await testSettings(settings({ transport: 'starttls' }), ad.bindPassword)).toEqual({
      ok: true,
      groupCount: expected,
    });
    expect(await testSettings(settings({ transport: 'plain' }), ad.bindPassword)).toEqual({
      ok: true,
      groupCount: expected,
    });
  });

  it('a wrong bind password: INVALID_CREDENTIALS, with AD\'s "data 52e" in words', async () => {
    const result = await testSettings(settings(), 'Wr0ngPassword!');
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.code).toBe('INVALID_CREDENTIALS');
    expect(result.error.adSubCode).toBe('52e');
    expect(result.error.message).toBe(
      `dc1.example.test (${ad.host}):636 refused the bind as "${ad.bindDn}": invalid credentials (wrong password) (AD data 52e)`,
    );
    expect(result.error.message).not.toContain('Wr0ngPassword!');
  });

  it('a bind DN that does not exist: INVALID_CREDENTIALS', async () => {
    const result = await testSettings(
      settings({ bindDn: 'CN=Nobody,CN=Users,DC=example,DC=test' }),
      ad.bindPassword,
    );
    expect(result).toMatchObject({ ok: false, error: { code: 'INVALID_CREDENTIALS' } });
  });

  it('a search base that is not there: NO_SUCH_BASE', async () => {
    const result = await testSettings(settings({ baseDn: 'DC=nope,DC=test' }), ad.bindPassword);
    expect(result).toMatchObject({ ok: false, error: { code: 'NO_SUCH_BASE' } });
  });

  it('TLS without the CA: in words', async () => {
    const result = await testSettings(settings({ caCertificate: undefined }), ad.bindPassword);
    expect(result).toMatchObject({ ok: false, error: { code: 'TLS' } });
  });
});

describe('users', () => {
  it('alice, ALICE, alice@example.test and EXAMPLE\\alice are the user CN=Alice Anderson, named alice', async () => {
    const d = directory();
    for (const typed of [
      'alice',
      'ALICE',
      'alice@example.test',
      'Alice@EXAMPLE.TEST',
      'EXAMPLE\\alice',
      'example\\ALICE',
    ]) {
      const user = await d.findUser(typed);
      expect(user, typed).toMatchObject({
        dn: 'CN=Alice Anderson,CN=Users,DC=example,DC=test',
        name: 'alice',
        shortName: 'alice',
        disabled: false,
        primaryGroupId: 513,
      });
      expect(user?.sid).toMatch(/^S-1-5-21-\d+-\d+-\d+-\d+$/);
      expect(user?.freshness).toMatch(/pwdLastSet=\d+;userAccountControl=512/);
    }
  });

  it('nobody, and injection attempts, find nobody; a computer account is not a user', async () => {
    const d = directory();
    for (const name of ['nobody', '*', ')(sAMAccountName=*', 'alice)(|(sAMAccountName=*', 'DC1$']) {
      expect(await d.findUser(name), name).toBeUndefined();
    }
  });
});

describe('checkPassword', () => {
  it('every login form with the right password is alice; then from the cache', async () => {
    const d = directory();
    expect(await d.checkPassword('alice', PASSWORD)).toEqual({ ok: true, user: 'alice', cached: false });
    for (const typed of ['alice@example.test', 'EXAMPLE\\alice', 'ALICE']) {
      expect(await d.checkPassword(typed, PASSWORD)).toEqual({ ok: true, user: 'alice', cached: true });
    }
  });

  it('a wrong password, an unknown user, an empty password, bad names', async () => {
    const d = directory();
    expect(await d.checkPassword('bob', 'Wr0ngPassword!')).toEqual({
      ok: false,
      reason: 'wrong-password',
      user: 'bob',
    });
    expect(await d.checkPassword('EXAMPLE\\bob', 'Wr0ngPassword!')).toMatchObject({
      reason: 'wrong-password',
    });
    expect(await d.checkPassword('nobody', PASSWORD)).toEqual({ ok: false, reason: 'unknown-user' });
    expect(await d.checkPassword('bob', '')).toEqual({ ok: false, reason: 'empty-password' });
    expect(await d.checkPassword('*', PASSWORD)).toEqual({ ok: false, reason: 'unknown-user' });
    expect(await d.checkPassword('x'.repeat(10_000), PASSWORD)).toEqual({
      ok: false,
      reason: 'invalid-name',
    });
  });

  it('a changed password and a disabled account are seen at once, cache or not', async () => {
    await ad.samba(['user', 'add', 'dora', PASSWORD, '--given-name=Dora', '--surname=Diaz']);
    try {
      const d = directory();
      expect(await d.checkPassword('dora', PASSWORD)).toMatchObject({ ok: true, cached: false });
      expect(await d.checkPassword('dora', PASSWORD)).toMatchObject({ ok: true, cached: true });
      await ad.samba(['user', 'setpassword', 'dora', '--newpassword=N3w-Passw0rd!']);
      // The cache is not asked: pwdLastSet changed. What the DC says goes, and Samba, like Windows, may
      // still take the previous password for a while ("old password allowed period"): compare with a
      // bind of its own.
      const old = await d.checkPassword('dora', PASSWORD);
      expect(old).not.toMatchObject({ cached: true });
      expect(old.ok).toBe(await simpleBind('CN=Dora Diaz,CN=Users,DC=example,DC=test', PASSWORD));
      expect(await d.checkPassword('dora', 'Wr0ng-Passw0rd!')).toEqual({
        ok: false,
        reason: 'wrong-password',
        user: 'dora',
      });
      expect(await d.checkPassword('dora', 'N3w-Passw0rd!')).toMatchObject({ ok: true, cached: false });
      expect(await d.checkPassword('dora', 'N3w-Passw0rd!')).toMatchObject({ ok: true, cached: true });
      await ad.samba(['user', 'disable', 'dora']);
      expect(await d.checkPassword('dora', 'N3w-Passw0rd!')).toEqual({
        ok: false,
        reason: 'account-disabled',
        user: 'dora',
      });
    } finally {
      await ad.samba(['user', 'delete', 'dora']);
    }
  });

  it('many checks at once, right and wrong', async () => {
    const d = directory();
    const users = ['alice', 'bob', 'carol'];
    const checks = Array.from({ length: 60 }, (_, i) => {
      const user = users[i % 3] as string;
      const right = i % 6 !== 0;
      return { user, right, result: d.checkPassword(user, right ? PASSWORD : `Wr0ng${i}!`) };
    });
    for (const c of checks) expect((await c.result).ok).toBe(c.right);
  });
});

describe('groups', () => {
  // Domain Users is itself a member of BUILTIN\Users, so every user is in Users through the primary group.
  it('direct groups, the primary group (Domain Users) and what it is in', async () => {
    expect(names(await directory().groupsOf('alice'))).toEqual(
      ['Domain Users', 'Staff Users', 'Users', 'proxy-users'].sort(),
    );
  });

  it('nested groups, through LDAP_MATCHING_RULE_IN_CHAIN', async () => {
    expect(names(await directory().groupsOf('bob'))).toEqual(
      ['Domain Users', 'Level1', 'Level2', 'Users', 'proxy-users'].sort(),
    );
  });

  it('a non-ASCII group name', async () => {
    expect(names(await directory().groupsOf('carol'))).toEqual(
      ['Domain Users', 'Users', 'Ünïcødé Group'].sort(),
    );
  });

  it('isMember: by cn in any case or by DN, for every login form', async () => {
    const d = directory();
    expect(await d.isMember('alice', 'Staff Users')).toBe(true);
    expect(await d.isMember('alice@example.test', 'staff users')).toBe(true);
    expect(await d.isMember('EXAMPLE\\alice', 'CN=Staff Users,CN=Users,DC=example,DC=test')).toBe(true);
    expect(await d.isMember('alice', 'Domain Users')).toBe(true);
    expect(await d.isMember('bob', 'level2')).toBe(true);
    expect(await d.isMember('carol', 'ÜNÏCØDÉ GROUP')).toBe(true);
    expect(await d.isMember('carol', 'Staff Users')).toBe(false);
    expect(await d.isMember('nobody', 'Domain Users')).toBe(false);
  });
});
