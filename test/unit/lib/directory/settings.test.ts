import { describe, expect, it } from 'vitest';
import {
  portOf,
  settingsWarnings,
  validateDirectorySettings,
  type DirectorySettings,
} from '../../../../lib/directory/settings.ts';

const AD_INPUT = {
  kind: 'active-directory',
  host: 'dc1.example.test',
  baseDn: 'DC=example,DC=test',
  bindDn: 'CN=Squid Bind,CN=Users,DC=example,DC=test',
};

const valid = (input: unknown): DirectorySettings => {
  const result = validateDirectorySettings(input);
  if (!result.ok) throw new Error(JSON.stringify(result.problems));
  return result.settings;
};

describe('validateDirectorySettings', () => {
  it('accepts the five fields and fills in the defaults', () => {
    expect(valid(AD_INPUT)).toEqual({
      ...AD_INPUT,
      transport: 'ldaps',
      connectTimeoutMs: 5000,
      timeoutMs: 10_000,
      passwordCacheSeconds: 60,
      groupCacheSeconds: 60,
    });
  });

  it('accepts an IP address as the host only for an open directory', () => {
    expect(valid({ ...AD_INPUT, kind: 'open-directory', host: '192.0.2.10' }).host).toBe('192.0.2.10');
    const result = validateDirectorySettings({ ...AD_INPUT, host: '192.0.2.10' });
    expect(result).toEqual({
      ok: false,
      problems: [
        {
          field: 'host',
          message:
            '"192.0.2.10": an IP address is accepted only for the open-directory kind; give the domain controller\'s fully-qualified name',
        },
      ],
    });
  });

  it('reports an IP address as the host of a Windows domain even when other fields are wrong or missing', () => {
    const result = validateDirectorySettings({ kind: 'active-directory', host: '192.0.2.10', port: 0 });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const byField = Object.fromEntries(result.problems.map((p) => [p.field, p.message]));
    expect(Object.keys(byField).sort()).toEqual(['baseDn', 'bindDn', 'host', 'port']);
    expect(byField.host).toBe(
      '"192.0.2.10": an IP address is accepted only for the open-directory kind; give the domain controller\'s fully-qualified name',
    );
  });

  it('reads the bind DN and the search base with the DN parser: escapes and spaces, never an empty value', () => {
    expect(
      valid({
        ...AD_INPUT,
        bindDn: 'CN=Proxy\\, Squid + UID=squid , OU=Service Accounts,DC=example,DC=test',
      }),
    ).toBeDefined();
    expect(valid({ ...AD_INPUT, baseDn: 'dc=Example , DC=test' }).baseDn).toBe('dc=Example , DC=test');
    for (const bindDn of ['cn=,dc=test', 'cn=x,', '=x', 'cn=x,dc=test,', 'cn=x;;dc=y', 'cn=\\']) {
      const result = validateDirectorySettings({ ...AD_INPUT, bindDn });
      expect(result, bindDn).toMatchObject({ ok: false, problems: [{ field: 'bindDn' }] });
    }
    for (const baseDn of [
      'ou=people,dc=test',
      'dc=a+dc=b',
      'dc=-a',
      'dc=a_b',
      'dc=',
      `dc=${'a'.repeat(64)}`,
    ]) {
      const result = validateDirectorySettings({ ...AD_INPUT, baseDn });
      expect(result, baseDn).toMatchObject({ ok: false, problems: [{ field: 'baseDn' }] });
    }
  });

  it('lists every problem, each with its field name and the value given', () => {
    const result = validateDirectorySettings({
      kind: 'ldap',
      host: 'bad host!',
      baseDn: 'ou=people,dc=example',
      bindDn: 'squid',
      port: 70000,
      transport: 'tls',
      colour: 'blue',
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const byField = Object.fromEntries(result.problems.map((p) => [p.field, p.message]));
    expect(Object.keys(byField).sort()).toEqual([
      'baseDn',
      'bindDn',
      'colour',
      'host',
      'kind',
      'port',
      'transport',
    ]);
    expect(byField.colour).toBe('is not a directory setting');
    expect(byField.host).toBe('"bad host!" is not a host name');
    expect(byField.baseDn).toMatch(/DC=example,DC=test.*\(given: "ou=people,dc=example"\)$/);
    expect(byField.bindDn).toMatch(/\(given: "squid"\)$/);
    expect(byField.port).toMatch(/\(given: 70000\)$/);
    expect(byField.kind).toMatch(/\(given: "ldap"\)$/);
  });

  it('reports missing fields by name', () => {
    const result = validateDirectorySettings({});
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.map((p) => p.field).sort()).toEqual(['baseDn', 'bindDn', 'host', 'kind']);
  });

  it('shows a long value cut short', () => {
    const result = validateDirectorySettings({ ...AD_INPUT, caCertificate: 'x'.repeat(5000) });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems[0]?.field).toBe('caCertificate');
    expect(result.problems[0]?.message.length).toBeLessThan(200);
  });

  it('refuses what is not an object', () => {
    for (const input of [null, 'x', 42, []]) expect(validateDirectorySettings(input).ok).toBe(false);
  });
});

describe('portOf and settingsWarnings', () => {
  it('defaults to 636 for LDAPS and 389 otherwise', () => {
    expect(portOf(valid(AD_INPUT))).toBe(636);
    expect(portOf(valid({ ...AD_INPUT, transport: 'starttls' }))).toBe(389);
    expect(portOf(valid({ ...AD_INPUT, transport: 'plain', port: 3389 }))).toBe(3389);
  });

  it('warns about plain LDAP, and about TLS without a CA certificate', () => {
    expect(settingsWarnings(valid({ ...AD_INPUT, transport: 'plain' }))).toEqual([
      expect.stringMatching(/^transport "plain": passwords .* unencrypted; use LDAPS or StartTLS$/),
    ]);
    expect(settingsWarnings(valid(AD_INPUT))).toEqual([expect.stringMatching(/^no CA certificate/)]);
    expect(
      settingsWarnings(
        valid({ ...AD_INPUT, caCertificate: '-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----' }),
      ),
    ).toEqual([]);
  });
});
