import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/clock.ts';
import { Directory, testSettings, type DirectoryOptions } from '../../../lib/directory/directory.ts';
import { DirectoryError } from '../../../lib/directory/errors.ts';
import { BIND_ACCOUNT_HOLD_MS } from '../../../lib/directory/search-pool.ts';
import {
  directorySettingsSchema,
  type DirectorySettings,
  type DirectorySettingsInput,
} from '../../../lib/directory/settings.ts';
import { freePort } from '../../harness/processes.ts';
import { startSlapd, USER_PASSWORD, type Slapd } from '../../harness/slapd.ts';

// The directory library against a real OpenLDAP: transports and TLS, users, passwords, groups of every
// kind, the caches, and an outage in the middle of a run.

let slapd: Slapd;
beforeAll(async () => {
  slapd = await startSlapd();
});
afterAll(() => slapd?.stop());

const open: Directory[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((d) => d.close()));
});

/** StartTLS to 127.0.0.1 with the test CA, the certificate checked against ldap.example.test. */
function settings(over: Partial<DirectorySettingsInput> = {}): DirectorySettings {
  return directorySettingsSchema.parse({
    kind: 'open-directory',
    host: 'ldap.example.test',
    address: '127.0.0.1',
    port: slapd.port,
    transport: 'starttls',
    caCertificate: slapd.caPem,
    baseDn: slapd.baseDn,
    bindDn: slapd.bindDn,
    connectTimeoutMs: 2000,
    timeoutMs: 5000,
    ...over,
  });
}

function directory(
  over: Partial<DirectorySettingsInput> = {},
  options: Partial<DirectoryOptions> = {},
  password = slapd.bindPassword,
): Directory {
  const d = new Directory(settings(over), password, { clock: new ManualClock(), log: () => {}, ...options });
  open.push(d);
  return d;
}

/** The DirectoryError a promise rejects with. */
async function failure(promise: Promise<unknown>): Promise<DirectoryError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DirectoryError) return error;
    throw error;
  }
  throw new Error('expected a DirectoryError');
}

const names = (groups: readonly { name: string }[] | undefined) => (groups ?? []).map((g) => g.name).sort();
const ALL_GROUPS = 9;

describe('connecting', () => {
  it('counts the user groups over plain LDAP, StartTLS and LDAPS', async () => {
    expect(await directory({ transport: 'plain', host: '127.0.0.1', address: undefined }).countGroups()).toBe(
      ALL_GROUPS,
    );
    expect(await directory().countGroups()).toBe(ALL_GROUPS);
    expect(await directory({ transport: 'ldaps', port: slapd.ldapsPort }).countGroups()).toBe(ALL_GROUPS);
  });

  it('accepts an IP address as the host (checked against the certificate IP SAN)', async () => {
    expect(await directory({ host: '127.0.0.1', address: undefined }).countGroups()).toBe(ALL_GROUPS);
  });

  it('without the CA: a TLS error in words, for LDAPS and StartTLS alike', async () => {
    for (const over of [
      { transport: 'ldaps' as const, port: slapd.ldapsPort },
      { transport: 'starttls' as const },
    ]) {
      const error = await failure(directory({ ...over, caCertificate: undefined }).countGroups());
      expect(error.code).toBe('TLS');
      expect(error.message).toMatch(/^TLS with ldap\.example\.test \(127\.0\.0\.1\):\d+ failed: /);
      expect(error.message).toMatch(/unknown CA|not trusted|self-signed/);
    }
  });

  it('a certificate for another name: name mismatch', async () => {
    const error = await failure(directory({ host: 'other.example.test' }).countGroups());
    expect(error.code).toBe('TLS');
    expect(error.message).toContain('not for this host name (name mismatch)');
  });

  it('LDAPS settings against the plain port: the server does not answer in TLS', async () => {
    const error = await failure(directory({ transport: 'ldaps', port: slapd.port }).countGroups());
    expect(error.code).toBe('TLS');
  });
});

describe('testSettings (Save & apply)', () => {
  it('reports the group count', async () => {
    expect(await testSettings(settings(), slapd.bindPassword)).toEqual({ ok: true, groupCount: ALL_GROUPS });
  });

  it('a wrong bind password, a wrong bind DN: INVALID_CREDENTIALS, the password nowhere in the message', async () => {
    const wrong = await testSettings(settings(), 'not-the-password');
    expect(wrong).toMatchObject({ ok: false, error: { code: 'INVALID_CREDENTIALS' } });
    if (wrong.ok) return;
    expect(wrong.error.message).toBe(
      `ldap.example.test (127.0.0.1):${slapd.port} refused the bind as "${slapd.bindDn}": invalid credentials: wrong DN or password`,
    );
    expect(wrong.error.message).not.toContain('not-the-password');
    const dn = await testSettings(settings({ bindDn: 'cn=nobody,dc=example,dc=test' }), slapd.bindPassword);
    expect(dn).toMatchObject({ ok: false, error: { code: 'INVALID_CREDENTIALS' } });
  });

  it('an empty bind password is refused before any bind (it would bind anonymously)', async () => {
    const result = await testSettings(settings(), '');
    expect(result).toMatchObject({ ok: false, error: { code: 'INVALID_CREDENTIALS' } });
  });

  it('a search base that does not exist: NO_SUCH_BASE', async () => {
    const result = await testSettings(settings({ baseDn: 'dc=nope,dc=test' }), slapd.bindPassword);
    expect(result).toMatchObject({
      ok: false,
      error: {
        code: 'NO_SUCH_BASE',
        message: `the search base "dc=nope,dc=test" does not exist on ldap.example.test (127.0.0.1):${slapd.port}`,
      },
    });
  });

  it('nothing listening: UNREACHABLE; an unknown host name: UNREACHABLE, in words', async () => {
    const port = await freePort();
    const refused = await testSettings(settings({ port }), slapd.bindPassword);
    expect(refused).toMatchObject({ ok: false, error: { code: 'UNREACHABLE' } });
    if (!refused.ok) expect(refused.error.message).toContain('connection refused');
    const unknown = await testSettings(
      settings({ host: 'no-such-host.invalid', address: undefined }),
      slapd.bindPassword,
    );
    expect(unknown).toMatchObject({ ok: false, error: { code: 'UNREACHABLE' } });
    if (!unknown.ok) expect(unknown.error.message).toMatch(/unknown host name|could not be resolved/);
  });
});

describe('users', () => {
  it('finds a user by uid; the name is the uid lower-cased, whatever was typed', async () => {
    const d = directory();
    for (const typed of ['alice', 'ALICE', ' Alice ', 'alice@example.test']) {
      const user = await d.findUser(typed);
      expect(user).toMatchObject({ dn: 'uid=alice,ou=people,dc=example,dc=test', name: 'alice' });
      expect(user?.freshness).toMatch(/^entryCSN=\d{14}\.\d{6}Z#/);
    }
  });

  it('an unknown user, and injection attempts, find nobody', async () => {
    const d = directory();
    for (const name of ['nobody', '*', ')(uid=*', 'alice)(uid=*', '*)(objectClass=*', 'a*', 'alice*']) {
      expect(await d.findUser(name)).toBeUndefined();
    }
  });
});

describe('checkPassword', () => {
  it('accepts the right password, then from the cache', async () => {
    const d = directory();
    expect(await d.checkPassword('alice', USER_PASSWORD)).toEqual({ ok: true, user: 'alice', cached: false });
    expect(await d.checkPassword('ALICE', USER_PASSWORD)).toEqual({ ok: true, user: 'alice', cached: true });
  });

  it('refuses a wrong password (also after a cached success), an unknown user, bad names', async () => {
    const d = directory();
    await d.checkPassword('bob', USER_PASSWORD);
    expect(await d.checkPassword('bob', 'wrong')).toEqual({
      ok: false,
      reason: 'wrong-password',
      user: 'bob',
    });
    expect(await d.checkPassword('bob', `${USER_PASSWORD} `)).toMatchObject({
      ok: false,
      reason: 'wrong-password',
    });
    expect(await d.checkPassword('nobody', USER_PASSWORD)).toEqual({ ok: false, reason: 'unknown-user' });
    for (const name of ['*', ')(uid=*', 'alice)(|(uid=*']) {
      expect(await d.checkPassword(name, USER_PASSWORD)).toEqual({ ok: false, reason: 'unknown-user' });
    }
    for (const name of ['EXAMPLE\\alice', '\\00', 'x'.repeat(10_000), 'al\x00ice', '']) {
      expect(await d.checkPassword(name, USER_PASSWORD)).toEqual({ ok: false, reason: 'invalid-name' });
    }
  });

  it('refuses an empty password before anything is sent (here: to a server that is not there)', async () => {
    const d = directory({ port: await freePort() });
    expect(await d.checkPassword('alice', '')).toEqual({ ok: false, reason: 'empty-password' });
    await expect(d.checkPassword('alice', USER_PASSWORD)).rejects.toBeInstanceOf(DirectoryError);
  });

  it('a password changed in the directory: the old one is refused at once, cache or not', async () => {
    await slapd.modify(
      [
        'dn: uid=frank,ou=people,dc=example,dc=test',
        'changetype: add',
        'objectClass: inetOrgPerson',
        'uid: frank',
        'cn: Frank Foster',
        'sn: Foster',
        `userPassword: ${USER_PASSWORD}`,
        '',
      ].join('\n'),
    );
    const d = directory();
    expect(await d.checkPassword('frank', USER_PASSWORD)).toMatchObject({ ok: true, cached: false });
    expect(await d.checkPassword('frank', USER_PASSWORD)).toMatchObject({ ok: true, cached: true });
    await slapd.modify(
      [
        'dn: uid=frank,ou=people,dc=example,dc=test',
        'changetype: modify',
        'replace: userPassword',
        'userPassword: N3w-Passw0rd',
        '',
      ].join('\n'),
    );
    expect(await d.checkPassword('frank', USER_PASSWORD)).toEqual({
      ok: false,
      reason: 'wrong-password',
      user: 'frank',
    });
    expect(await d.checkPassword('frank', 'N3w-Passw0rd')).toMatchObject({ ok: true, cached: false });
    await slapd.modify('dn: uid=frank,ou=people,dc=example,dc=test\nchangetype: delete\n');
    expect(await d.checkPassword('frank', 'N3w-Passw0rd')).toEqual({ ok: false, reason: 'unknown-user' });
  });

  it('many checks at once, right and wrong, all answered correctly', async () => {
    const d = directory({}, { bindConnections: 4, searchConnections: 2 });
    const users = ['alice', 'bob', 'carol', 'dave', 'erin'];
    const checks = Array.from({ length: 200 }, (_, i) => {
      const user = users[i % users.length] as string;
      const right = i % 10 !== 0;
      return { user, right, result: d.checkPassword(user, right ? USER_PASSWORD : `wrong${i}`) };
    });
    for (const c of checks) {
      const result = await c.result;
      expect(result.ok, `${c.user} ${c.right}`).toBe(c.right);
      if (result.ok) expect(result.user).toBe(c.user);
      else expect(result).toMatchObject({ reason: 'wrong-password', user: c.user });
    }
  });
});

describe('groups', () => {
  it('groupOfNames (memberOf overlay), with a space in the name', async () => {
    expect(names(await directory().groupsOf('alice'))).toEqual(['Staff Users', 'proxy-users']);
  });

  it('nested two levels', async () => {
    expect(names(await directory().groupsOf('bob'))).toEqual(['level1', 'level2', 'proxy-users']);
  });

  it('posixGroup by memberUid', async () => {
    expect(names(await directory().groupsOf('carol'))).toEqual(['posix-staff']);
  });

  it('groupOfUniqueNames, and a cycle that ends', async () => {
    expect(names(await directory().groupsOf('dave'))).toEqual(['cycle-a', 'cycle-b', 'unique-group']);
  });

  it('a non-ASCII group name', async () => {
    expect(names(await directory().groupsOf('erin'))).toEqual(['Ünïcødé Group']);
  });

  it('isMember: by cn in any case, by DN; an unknown user or group is not a member', async () => {
    const d = directory();
    expect(await d.isMember('alice', 'Staff Users')).toBe(true);
    expect(await d.isMember('ALICE', 'staff users')).toBe(true);
    expect(await d.isMember('alice', 'cn=Staff Users,ou=groups,dc=example,dc=test')).toBe(true);
    expect(await d.isMember('erin', 'ünïcødé group')).toBe(true);
    expect(await d.isMember('bob', 'level2')).toBe(true);
    expect(await d.isMember('bob', 'Staff Users')).toBe(false);
    expect(await d.isMember('alice', 'Staff')).toBe(false);
    expect(await d.isMember('nobody', 'Staff Users')).toBe(false);
    expect(await d.isMember('*', 'Staff Users')).toBe(false);
    expect(await d.isMember('EXAMPLE\\alice', 'Staff Users')).toBe(false);
    expect(await d.groupsOf('nobody')).toBeUndefined();
  });

  it('memberships are cached for groupCacheSeconds', async () => {
    const clock = new ManualClock();
    const d = directory({ groupCacheSeconds: 60 }, { clock });
    const group = 'cn=temp-group,ou=groups,dc=example,dc=test';
    expect(await d.isMember('carol', 'temp-group')).toBe(false);
    await slapd.modify(
      [
        `dn: ${group}`,
        'changetype: add',
        'objectClass: groupOfNames',
        'cn: temp-group',
        'member: uid=carol,ou=people,dc=example,dc=test',
        '',
      ].join('\n'),
    );
    try {
      expect(await d.isMember('carol', 'temp-group')).toBe(false);
      clock.advance(60_000);
      expect(await d.isMember('carol', 'temp-group')).toBe(true);
    } finally {
      await slapd.modify(`dn: ${group}\nchangetype: delete\n`);
    }
  });
});

describe('the bind account refused', () => {
  it('is not tried again for a while (AD would lock it out), then is', async () => {
    const clock = new ManualClock();
    const d = directory({}, { clock }, 'not-the-password');
    const first = await failure(d.countGroups());
    expect(first.code).toBe('INVALID_CREDENTIALS');
    // The same error, not a new bind.
    expect(await failure(d.findUser('alice'))).toBe(first);
    clock.advance(BIND_ACCOUNT_HOLD_MS);
    const later = await failure(d.countGroups());
    expect(later.code).toBe('INVALID_CREDENTIALS');
    expect(later).not.toBe(first);
  });
});

describe('an outage in the middle of a run', () => {
  it('a restart while idle goes unnoticed: the next call connects again', async () => {
    const d = directory();
    expect(await d.checkPassword('carol', USER_PASSWORD)).toMatchObject({ ok: true });
    await slapd.restart();
    expect(await d.checkPassword('carol', USER_PASSWORD)).toMatchObject({ ok: true });
    expect(await d.checkPassword('carol', 'wrong')).toMatchObject({ ok: false, reason: 'wrong-password' });
    expect(await d.countGroups()).toBe(ALL_GROUPS);
  });

  it('answers DirectoryError while slapd is down, and works again when it is back, with no restart', async () => {
    const d = directory({ groupCacheSeconds: 0 });
    expect(await d.checkPassword('alice', USER_PASSWORD)).toMatchObject({ ok: true });
    expect(await d.isMember('bob', 'level2')).toBe(true);
    await slapd.halt();
    try {
      // A cached password does not help: the user is searched on every check.
      const down = await failure(d.checkPassword('alice', USER_PASSWORD));
      expect(down.code).toBe('UNREACHABLE');
      expect((await failure(d.isMember('bob', 'level2'))).code).toBe('UNREACHABLE');
      expect((await failure(d.countGroups())).code).toBe('UNREACHABLE');
    } finally {
      await slapd.restart();
    }
    expect(await d.checkPassword('alice', USER_PASSWORD)).toMatchObject({ ok: true, user: 'alice' });
    expect(await d.checkPassword('alice', 'wrong')).toMatchObject({ ok: false, reason: 'wrong-password' });
    expect(await d.isMember('bob', 'level2')).toBe(true);
  });
});
