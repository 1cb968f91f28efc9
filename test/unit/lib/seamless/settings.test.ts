import { describe, expect, it } from 'vitest';
import type { DirectorySettings } from '../../../../lib/directory/settings.ts';
import { DirectoryError } from '../../../../lib/directory/errors.ts';
import {
  netbiosNameProblem,
  normaliseDomain,
  parseAdminUser,
  parseSeamlessSettings,
  seamlessAvailability,
  serverVersionOf,
  type SeamlessValidation,
} from '../../../../lib/seamless/settings.ts';

const PASSWORD = 'S3cret-adm1n!';
const INPUT = {
  serverVersion: '2012',
  domain: 'example.test',
  adminUser: 'Administrator',
  adminPassword: PASSWORD,
};

const ok = (result: SeamlessValidation) => {
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return result;
};
const problemsOf = (result: SeamlessValidation) => {
  if (result.ok) throw new Error('accepted');
  return Object.fromEntries(result.problems.map((p) => [p.field, p.message]));
};

describe('parseSeamlessSettings', () => {
  it('accepts the five fields, derives realm and NetBIOS name, and gives the password back apart', () => {
    const result = ok(parseSeamlessSettings({ ...INPUT, domain: 'Example.Test.' }));
    expect(result.settings).toEqual({
      serverVersion: '2012',
      domain: 'example.test',
      realm: 'EXAMPLE.TEST',
      netbiosDomain: 'EXAMPLE',
      adminUser: { account: 'Administrator', form: 'short' },
    });
    expect(Buffer.isBuffer(result.password)).toBe(true);
    expect(result.password.toString('utf8')).toBe(PASSWORD);
    expect(JSON.stringify(result.settings)).not.toContain(PASSWORD);
  });

  it('maps server versions: 2003/2008/2012 as given, later ones to 2012, numbers and "R2" too', () => {
    const version = (serverVersion: unknown) =>
      ok(parseSeamlessSettings({ ...INPUT, serverVersion })).settings.serverVersion;
    expect(version('2003')).toBe('2003');
    expect(version(2008)).toBe('2008');
    expect(version('2008 R2')).toBe('2008');
    expect(version('Windows Server 2012 R2')).toBe('2012');
    for (const later of ['2016', '2019', 2022, '2025']) expect(version(later)).toBe('2012');
    for (const bad of ['2000', '2010', '2003 R2', 'latest', '', 2012.5, null, `2012${' '.repeat(40)}`]) {
      expect(serverVersionOf(bad), String(bad)).toBeUndefined();
    }
    expect(problemsOf(parseSeamlessSettings({ ...INPUT, serverVersion: '2000' }))).toEqual({
      serverVersion:
        'must be 2003, 2008 or 2012 (a later version such as 2016, 2019, 2022, 2025 is treated as 2012) (given: "2000")',
    });
  });

  it('wants a domain, not a host: two labels at least, valid labels, at most 253 characters', () => {
    expect(problemsOf(parseSeamlessSettings({ ...INPUT, domain: 'example' })).domain).toBe(
      '"example" is a single label; give the domain\'s full DNS name (at least two labels, e.g. example.test)',
    );
    expect(problemsOf(parseSeamlessSettings({ ...INPUT, domain: '192.0.2.1' })).domain).toBe(
      '"192.0.2.1" is an IP address; give the domain\'s DNS name, e.g. example.test',
    );
    for (const domain of [
      '-a.test',
      'a_b.test',
      'a..test',
      'a.test/x',
      ' example.test',
      `${'a'.repeat(64)}.test`,
    ]) {
      expect(problemsOf(parseSeamlessSettings({ ...INPUT, domain })).domain, domain).toMatch(
        /is not a DNS domain name: labels of letters, digits and hyphens/,
      );
    }
    const long = `${'a.'.repeat(126)}te`; // 254 characters
    expect(problemsOf(parseSeamlessSettings({ ...INPUT, domain: long })).domain).toMatch(
      /^is 254 characters long; a domain name has at most 253/,
    );
    expect(normaliseDomain(long.slice(2))).toBe(long.slice(2));
  });

  it("says so when the domain is the directory server's host name", () => {
    const result = parseSeamlessSettings(
      { ...INPUT, domain: 'DC1.example.test' },
      { directoryHost: 'dc1.example.test' },
    );
    expect(problemsOf(result)).toEqual({
      domain:
        '"dc1.example.test" is the directory server\'s host name, not the domain: give the domain it belongs to, e.g. example.test',
    });
    expect(ok(parseSeamlessSettings(INPUT, { directoryHost: 'dc1.example.test' })).settings.domain).toBe(
      'example.test',
    );
  });

  it('takes a NetBIOS domain name as given (upper-cased) under Microsoft rules, or refuses it', () => {
    expect(ok(parseSeamlessSettings({ ...INPUT, netbiosDomain: 'corp-01' })).settings.netbiosDomain).toBe(
      'CORP-01',
    );
    expect(ok(parseSeamlessSettings({ ...INPUT, netbiosDomain: '' })).settings.netbiosDomain).toBe('EXAMPLE');
    expect(problemsOf(parseSeamlessSettings({ ...INPUT, netbiosDomain: 'ABCDEFGHIJKLMNOP' }))).toEqual({
      netbiosDomain: '"ABCDEFGHIJKLMNOP" is 16 characters long; a NetBIOS name has at most 15',
    });
    for (const [name, why] of [
      ['EX:AMPLE', 'contains ":"'],
      ['EX AMPLE', 'contains " "'],
      ['EX\\AMPLE', 'contains "\\\\"'],
      ['.EXAMPLE', 'must not start with a period'],
      ['12345', 'must not be all digits'],
    ] as const) {
      expect(
        problemsOf(parseSeamlessSettings({ ...INPUT, netbiosDomain: name })).netbiosDomain,
        name,
      ).toContain(why);
    }
    expect(netbiosNameProblem("A!@#$%^&')(.-_{}~")).toBe(
      'is 17 characters long; a NetBIOS name has at most 15',
    );
    expect(netbiosNameProblem("!@#$%^&')(.-_{}")).toBeUndefined();
  });

  it('refuses a default NetBIOS name that cannot be one, asking for the name', () => {
    const result = parseSeamlessSettings({ ...INPUT, domain: 'engineering-department.example.test' });
    expect(problemsOf(result)).toEqual({
      netbiosDomain:
        'is required: the default, the domain\'s first label "ENGINEERING-DEPARTMENT", is 22 characters long; a NetBIOS name has at most 15; give the domain\'s NetBIOS name as Windows shows it (e.g. in "net config workstation")',
    });
    expect(
      ok(
        parseSeamlessSettings({
          ...INPUT,
          domain: 'engineering-department.example.test',
          netbiosDomain: 'ENG',
        }),
      ).settings.netbiosDomain,
    ).toBe('ENG');
  });

  it('splits DOMAIN\\user and user@realm, and refuses what is no user name', () => {
    expect(
      ok(parseSeamlessSettings({ ...INPUT, adminUser: 'EXAMPLE\\Administrator' })).settings.adminUser,
    ).toEqual({ account: 'Administrator', domain: 'EXAMPLE', form: 'down-level' });
    expect(parseAdminUser('admin@EXAMPLE.TEST')).toEqual({
      account: 'admin',
      domain: 'EXAMPLE.TEST',
      form: 'upn',
    });
    for (const [user, why] of [
      ['', '"" is empty'],
      ['a\u0007b', 'contains a control character'],
      [' admin', 'must not start or end with white space'],
      ['EXAMPLE\\', 'must be a user name: user, DOMAIN\\user or user@realm'],
      ['\\admin', 'must be a user name'],
      ['a\\b\\c', 'must be a user name'],
      ['a@b@c', 'must be a user name'],
      ['D\\a@b', 'must be a user name'],
      ['x'.repeat(257), 'is longer than 256 characters'],
      // net would take "Secret" from argv as the password (and log and show it with the name).
      ['adm%Secret', 'must not contain "%": net reads % as the start of a password'],
      ['EXAMPLE\\adm%Secret', 'must not contain "%"'],
      ['adm%Secret@EXAMPLE.TEST', 'must not contain "%"'],
      ['EXAMPLE/adm', 'must not contain "/"'],
    ] as const) {
      expect(problemsOf(parseSeamlessSettings({ ...INPUT, adminUser: user })).adminUser, user).toContain(why);
    }
    expect(parseAdminUser('x'.repeat(256))).toMatchObject({ form: 'short' });
  });

  it('checks the password without ever quoting it', () => {
    const cases = [
      [undefined, "is required (missing): the Domain Admin's password, used for the join only"],
      ['', 'must not be empty'],
      [`${PASSWORD}\n`, 'must not contain line breaks or NUL characters'],
      [`${PASSWORD}\0`, 'must not contain line breaks or NUL characters'],
      [PASSWORD.repeat(100), 'is longer than 1024 characters'],
      [42, 'must be text'],
    ] as const;
    for (const [adminPassword, message] of cases) {
      const result = parseSeamlessSettings({ ...INPUT, adminPassword });
      expect(problemsOf(result), String(adminPassword)).toEqual({ adminPassword: message });
      expect(JSON.stringify(result)).not.toContain(PASSWORD);
    }
    expect(ok(parseSeamlessSettings({ ...INPUT, adminPassword: 'p'.repeat(1024) })).password.length).toBe(
      1024,
    );
  });

  it('lists every problem at once, unknown fields too, and the password never in a message', () => {
    const result = parseSeamlessSettings({
      serverVersion: 'NT4',
      domain: 'single',
      adminUser: '',
      adminPassword: `${PASSWORD}\r`,
      realm: 'EXTRA',
    });
    expect(problemsOf(result)).toEqual({
      serverVersion: expect.stringContaining('(given: "NT4")') as string,
      domain: expect.stringContaining('is a single label') as string,
      adminUser: '"" is empty',
      adminPassword: 'must not contain line breaks or NUL characters',
      realm: 'is not a seamless setting',
    });
    expect(JSON.stringify(result)).not.toContain(PASSWORD);
    expect(problemsOf(parseSeamlessSettings({}))).toEqual({
      serverVersion: expect.stringContaining('(missing)') as string,
      domain: expect.stringContaining('(missing)') as string,
      adminUser: expect.stringContaining('(missing)') as string,
      adminPassword: expect.stringContaining('(missing)') as string,
    });
    expect(problemsOf(parseSeamlessSettings('x'))).toEqual({
      '(settings)': "must be an object of the dialogue's fields",
    });
  });
});

describe('seamlessAvailability', () => {
  const AD: DirectorySettings = {
    kind: 'active-directory',
    host: 'dc1.example.test',
    baseDn: 'DC=example,DC=test',
    bindDn: 'CN=Squid,CN=Users,DC=example,DC=test',
    transport: 'ldaps',
    connectTimeoutMs: 5000,
    timeoutMs: 10_000,
    passwordCacheSeconds: 60,
    groupCacheSeconds: 60,
  };

  it('is available for an applied Windows domain that works', () => {
    expect(seamlessAvailability({ settings: AD })).toEqual({ ok: true });
    expect(seamlessAvailability({ settings: AD }, { ok: true, groupCount: 3 })).toEqual({ ok: true });
  });

  it('names the missing prerequisite and how to fix it', () => {
    expect(seamlessAvailability(undefined)).toEqual({
      ok: false,
      code: 'NO_DIRECTORY',
      reason:
        'no directory service is configured: set up the Windows domain on the Directory service settings screen (or `doorman directory set`) first',
    });
    expect(seamlessAvailability({ settings: { ...AD, kind: 'open-directory' } })).toEqual({
      ok: false,
      code: 'NOT_WINDOWS_DOMAIN',
      reason:
        'the directory service is of the open-directory kind; seamless authentication needs a Windows domain (Active Directory): change the kind to active-directory on the Directory service settings screen',
    });
    const error = new DirectoryError('UNREACHABLE', 'cannot reach dc1.example.test:636 (connection refused)');
    expect(seamlessAvailability({ settings: AD }, { ok: false, error })).toEqual({
      ok: false,
      code: 'DIRECTORY_FAILING',
      reason:
        'the directory service does not work now (cannot reach dc1.example.test:636 (connection refused)): fix it on the Directory service settings screen (or check with `doorman directory test`) first',
    });
  });
});
