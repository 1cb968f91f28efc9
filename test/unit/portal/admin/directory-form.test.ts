import { describe, expect, it } from 'vitest';
import { directorySettingsSchema } from '../../../../lib/directory/settings.ts';
import { readDirectoryForm, settingsToForm } from '../../../../portal/admin/directory-form.ts';

const form = (fields: Record<string, string>) => new Map(Object.entries(fields));
const BASE = {
  kind: 'active-directory',
  host: ' dc1.example.test ',
  baseDn: 'DC=example,DC=test',
  bindDn: 'CN=Squid Proxy,CN=Users,DC=example,DC=test',
  transport: 'ldaps',
};

describe('readDirectoryForm', () => {
  it('trims single-line fields, leaves out blank optional ones and reads numbers', () => {
    const read = readDirectoryForm(
      form({ ...BASE, password: ' secret ', port: '3269', address: '', timeoutMs: ' 2000 ' }),
      false,
    );
    expect(read.problems).toEqual([]);
    expect(read.password).toBe(' secret '); // a password is taken as typed
    expect(read.input).toEqual({
      kind: 'active-directory',
      host: 'dc1.example.test',
      baseDn: 'DC=example,DC=test',
      bindDn: 'CN=Squid Proxy,CN=Users,DC=example,DC=test',
      transport: 'ldaps',
      port: 3269,
      timeoutMs: 2000,
    });
    expect(read.values.host).toBe('dc1.example.test');
  });

  it('a blank password keeps the stored one, and is a problem when none is stored', () => {
    expect(readDirectoryForm(form({ ...BASE, password: '' }), true)).toMatchObject({
      password: undefined,
      problems: [],
    });
    expect(readDirectoryForm(form(BASE), false).problems).toEqual([
      { field: 'password', message: 'required: no password is stored yet' },
    ]);
  });

  it('turns CRLF in the CA textarea into LF', () => {
    const pem = '-----BEGIN CERTIFICATE-----\r\nMIIB\r\n-----END CERTIFICATE-----\r\n';
    const read = readDirectoryForm(form({ ...BASE, caCertificate: pem }), true);
    expect(read.input.caCertificate).toBe('-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----');
  });

  it('lists every problem once, in plain words for blank required fields and non-numbers', () => {
    const read = readDirectoryForm(
      form({ kind: '', host: '', baseDn: 'x', bindDn: '', port: '12ab', groupCacheSeconds: '99999' }),
      true,
    );
    const byField = new Map(read.problems.map((p) => [p.field, p.message]));
    expect(byField.get('kind')).toBe('required');
    expect(byField.get('host')).toBe('required');
    expect(byField.get('bindDn')).toBe('required');
    expect(byField.get('port')).toBe('"12ab" is not a whole number');
    expect(byField.get('baseDn')).toMatch(/must be a DN of domain components/);
    expect(byField.get('groupCacheSeconds')).toBeDefined();
    expect(read.problems).toHaveLength(byField.size);
  });

  it('lists every problem in one answer: an IP host for a Windows domain beside a missing and a wrong field', () => {
    const read = readDirectoryForm(
      form({
        kind: 'active-directory',
        host: '192.0.2.10',
        baseDn: 'ou=people',
        bindDn: '',
        port: '636x',
        address: 'dc1',
      }),
      false,
    );
    expect(read.problems).toEqual([
      { field: 'bindDn', message: 'required' },
      { field: 'port', message: '"636x" is not a whole number' },
      { field: 'password', message: 'required: no password is stored yet' },
      { field: 'address', message: 'must be an IPv4 or IPv6 address (given: "dc1")' },
      {
        field: 'baseDn',
        message: 'must be a DN of domain components, e.g. DC=example,DC=test (given: "ou=people")',
      },
      {
        field: 'host',
        message:
          '"192.0.2.10": an IP address is accepted only for the open-directory kind; give the domain controller\'s fully-qualified name',
      },
    ]);
  });

  it('shows a long value cut short in its own words', () => {
    const read = readDirectoryForm(form({ ...BASE, port: '9'.repeat(100_000) }), true);
    expect(read.problems).toEqual([{ field: 'port', message: `"${'9'.repeat(64)}…" is not a whole number` }]);
  });

  it('round-trips the settings in force through the form', () => {
    const settings = directorySettingsSchema.parse({
      ...BASE,
      host: 'dc1.example.test',
      port: 3269,
      address: '192.0.2.10',
      caCertificate: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----',
    });
    const read = readDirectoryForm(form({ ...settingsToForm(settings) }), true);
    expect(read.problems).toEqual([]);
    expect(directorySettingsSchema.parse(read.input)).toEqual(settings);
  });
});
