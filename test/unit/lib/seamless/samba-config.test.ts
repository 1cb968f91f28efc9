import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../../lib/errors.ts';
import {
  httpKeytabPath,
  krb5Enctypes,
  machineNetbiosName,
  memberKrb5Conf,
  memberSmbConf,
  type Krb5ConfInput,
  type MemberConfInput,
} from '../../../../lib/seamless/samba-config.ts';
import { SERVER_VERSIONS } from '../../../../lib/seamless/settings.ts';

/** Golden files: reviewed against the lab's write_member_conf / write_krb5_conf; `testparm -s` reads smb-*.conf. */
const golden = (name: string) => readFileSync(new URL(`golden/${name}`, import.meta.url), 'utf8');

const SMB: MemberConfInput = {
  serverVersion: '2012',
  netbiosDomain: 'EXAMPLE',
  realm: 'example.test',
  proxyHostName: 'proxy.example.test',
  sambaDir: '/var/lib/doorman/samba',
};
const KRB5: Krb5ConfInput = {
  serverVersion: '2012',
  domain: 'example.test',
  realm: 'EXAMPLE.TEST',
  kdc: 'dc1.example.test',
};

/** The InvalidInputError `run` throws, for comparing field and message together. */
function refusal(run: () => unknown): { field: string; message: string } {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    const e = error as InvalidInputError;
    expect(e.code).toBe('INVALID_INPUT');
    return { field: e.field, message: e.message };
  }
  throw new Error('not refused');
}

describe('memberSmbConf', () => {
  it.each(SERVER_VERSIONS)('writes the member smb.conf for a %s domain controller', (serverVersion) => {
    expect(memberSmbConf({ ...SMB, serverVersion })).toBe(golden(`smb-${serverVersion}.conf`));
  });

  it('uses legacy keys for 2003 and strong ones for 2008 and later', () => {
    expect(memberSmbConf({ ...SMB, serverVersion: '2003' })).toContain(
      '\tkerberos encryption types = legacy\n',
    );
    expect(memberSmbConf({ ...SMB, serverVersion: '2008' })).toContain(
      '\tkerberos encryption types = strong\n',
    );
  });

  it('puts every directory and the dedicated keytab under sambaDir', () => {
    const conf = memberSmbConf({ ...SMB, sambaDir: '/srv/door man/' });
    expect(conf).toContain('\tprivate dir = /srv/door man/private\n');
    expect(conf).toContain(`\tdedicated keytab file = FILE:${httpKeytabPath('/srv/door man')}\n`);
    expect(httpKeytabPath('/srv/door man')).toBe('/srv/door man/http.keytab');
  });

  it('upper-cases the workgroup and the machine name, and takes a short host name as it is', () => {
    const conf = memberSmbConf({ ...SMB, netbiosDomain: 'corp', proxyHostName: 'squid01' });
    expect(conf).toContain('\tworkgroup = CORP\n');
    expect(conf).toContain('\tnetbios name = SQUID01\n');
    expect(conf).toContain('\tidmap config CORP : backend = rid\n');
  });

  it.each([
    ['a line break', { netbiosDomain: 'EX\nAMPLE' }, 'netbiosDomain', /contains a control character/],
    ['%', { netbiosDomain: 'EX%mPLE' }, 'netbiosDomain', /contains "%", which would break smb.conf/],
    ['#', { netbiosDomain: 'EX#MPLE' }, 'netbiosDomain', /contains "#", which would break smb.conf/],
    ['a space', { netbiosDomain: 'EX AMPLE' }, 'netbiosDomain', /contains " ", which would break smb.conf/],
    ['=', { netbiosDomain: 'A=B' }, 'netbiosDomain', /contains "=", which would break smb.conf/],
    ['a long name', { netbiosDomain: 'ABCDEFGHIJKLMNOP' }, 'netbiosDomain', /at most 15/],
    ['a colon', { netbiosDomain: 'A:B' }, 'netbiosDomain', /contains ":"; allowed are letters/],
    ['a newline in sambaDir', { sambaDir: '/var/lib\n[x]' }, 'sambaDir', /control character/],
    ['[ in sambaDir', { sambaDir: '/var/[lib]' }, 'sambaDir', /contains "\["/],
    ['; in sambaDir', { sambaDir: '/var/a;b' }, 'sambaDir', /contains ";"/],
    ['a trailing backslash', { sambaDir: '/var/lib\\' }, 'sambaDir', /contains "\\\\"/],
    ['% in sambaDir', { sambaDir: '/var/%u' }, 'sambaDir', /contains "%"/],
    ['a relative sambaDir', { sambaDir: 'var/lib' }, 'sambaDir', /is not an absolute path/],
    ['trailing space', { sambaDir: '/var/lib ' }, 'sambaDir', /ends with white space/],
    ['a bad realm', { realm: 'EXAMPLE' }, 'realm', /not a Kerberos realm/],
    ['a realm with =', { realm: 'A=B.TEST' }, 'realm', /not a Kerberos realm/],
    ['an IP as host name', { proxyHostName: '10.0.0.1' }, 'proxyHostName', /is not a host name/],
    ['a host name with ]', { proxyHostName: 'proxy].example' }, 'proxyHostName', /is not a host name/],
    [
      'a long short name',
      { proxyHostName: 'proxy-server-0001.example.test' },
      'proxyHostName',
      /"PROXY-SERVER-0001" is 17 characters long, but a Windows computer name \(NetBIOS\) has at most 15/,
    ],
    ['an all-digit name', { proxyHostName: '123.example.test' }, 'proxyHostName', /must not be all digits/],
    [
      'the domain as host name',
      { proxyHostName: 'example.example.test' },
      'proxyHostName',
      /equals the NetBIOS domain name/,
    ],
  ] as const)('refuses %s', (_what, change, field, message) => {
    const refused = refusal(() => memberSmbConf({ ...SMB, ...change }));
    expect(refused.field).toBe(field);
    expect(refused.message).toMatch(new RegExp(`^${field}: `));
    expect(refused.message).toMatch(message);
  });

  it('names the field, the value and what is allowed', () => {
    expect(refusal(() => memberSmbConf({ ...SMB, sambaDir: '/var/a#b' }))).toEqual({
      field: 'sambaDir',
      message: 'sambaDir: "/var/a#b" contains "#", which would break smb.conf; not allowed: % \\ ; # [ ] =',
    });
    expect(machineNetbiosName('Proxy.')).toBe('PROXY');
  });
});

describe('memberKrb5Conf', () => {
  it.each(SERVER_VERSIONS)('writes krb5.conf for a %s domain controller', (serverVersion) => {
    expect(memberKrb5Conf({ ...KRB5, serverVersion })).toBe(golden(`krb5-${serverVersion}.conf`));
  });

  it('allows RC4 only for 2003, and AES first, RC4 last for 2008 and later', () => {
    expect(krb5Enctypes('2003')).toBe('rc4-hmac');
    expect(krb5Enctypes('2008')).toBe('aes256-cts-hmac-sha1-96 aes128-cts-hmac-sha1-96 rc4-hmac');
    expect(krb5Enctypes('2012')).toBe(krb5Enctypes('2008'));
  });

  it('names the KDC by address, IPv6 in brackets', () => {
    expect(memberKrb5Conf({ ...KRB5, kdc: '192.0.2.10' })).toContain('        kdc = 192.0.2.10\n');
    expect(memberKrb5Conf({ ...KRB5, kdc: '2001:db8::10' })).toContain('        kdc = [2001:db8::10]\n');
  });

  it.each([
    ['a line break in the KDC', { kdc: 'dc1\n[realms]' }, 'kdc', /control character/],
    ['} in the KDC', { kdc: 'dc1}' }, 'kdc', /contains "\}", which would break krb5.conf/],
    ['# in the KDC', { kdc: 'dc1#x' }, 'kdc', /contains "#"/],
    ['a space in the KDC', { kdc: 'dc1 dc2' }, 'kdc', /contains " "/],
    ['an empty KDC', { kdc: '' }, 'kdc', /is empty/],
    ['a KDC that is no host', { kdc: 'dc_1.example.test' }, 'kdc', /neither a host name nor an IP address/],
    ['a realm with {', { realm: 'EXAMPLE.TEST{' }, 'realm', /not a Kerberos realm/],
    [
      'a realm of another domain',
      { realm: 'OTHER.TEST' },
      'realm',
      /is not the domain "example.test" upper-cased/,
    ],
    ['a single-label domain', { domain: 'example', realm: 'EXAMPLE.TEST' }, 'domain', /at least two labels/],
    ['a domain with =', { domain: 'a=b.test' }, 'domain', /not a DNS domain name/],
  ] as const)('refuses %s', (_what, change, field, message) => {
    const refused = refusal(() => memberKrb5Conf({ ...KRB5, ...change }));
    expect(refused.field).toBe(field);
    expect(refused.message).toMatch(message);
  });
});
