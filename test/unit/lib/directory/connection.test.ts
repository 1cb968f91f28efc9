import type { PeerCertificate } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { endpointOf, tlsOptionsOf } from '../../../../lib/directory/connection.ts';
import { directorySettingsSchema, type DirectorySettingsInput } from '../../../../lib/directory/settings.ts';

const settings = (over: Partial<DirectorySettingsInput> = {}) =>
  directorySettingsSchema.parse({
    kind: 'open-directory',
    host: 'ldap.example.test',
    baseDn: 'dc=example,dc=test',
    bindDn: 'cn=squid,ou=services,dc=example,dc=test',
    ...over,
  });

describe('endpointOf', () => {
  it("connects to the host on the transport's port", () => {
    expect(endpointOf(settings())).toEqual({
      url: 'ldaps://ldap.example.test:636',
      server: 'ldap.example.test:636',
    });
    expect(endpointOf(settings({ transport: 'starttls' })).url).toBe('ldap://ldap.example.test:389');
    expect(endpointOf(settings({ transport: 'plain', port: 3389 })).url).toBe(
      'ldap://ldap.example.test:3389',
    );
  });

  it('connects to `address` instead, naming both in messages', () => {
    expect(endpointOf(settings({ address: '192.0.2.7' }))).toEqual({
      url: 'ldaps://192.0.2.7:636',
      server: 'ldap.example.test (192.0.2.7):636',
    });
    expect(endpointOf(settings({ address: '2001:db8::7', transport: 'starttls' })).url).toBe(
      'ldap://[2001:db8::7]:389',
    );
  });
});

/** The two fields tls.checkServerIdentity reads; the rest of a certificate does not matter to it. */
const certificateFor = (name: string) =>
  ({ subject: { CN: name }, subjectaltname: `DNS:${name}` }) as unknown as PeerCertificate;

describe('tlsOptionsOf', () => {
  it('verifies against the host name with SNI, the given CA, TLS 1.2 or later', () => {
    const ca = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----';
    const options = tlsOptionsOf(settings({ address: '192.0.2.7', caCertificate: ca }));
    expect(options).toMatchObject({
      servername: 'ldap.example.test',
      ca,
      rejectUnauthorized: true,
      minVersion: 'TLSv1.2',
    });
    expect(options.checkServerIdentity).toBeTypeOf('function');
  });

  it('checks the certificate against `host`, not the address connected to', () => {
    const check = tlsOptionsOf(settings({ address: '192.0.2.7' })).checkServerIdentity;
    expect(check?.('192.0.2.7', certificateFor('ldap.example.test'))).toBeUndefined();
    expect(check?.('192.0.2.7', certificateFor('other.example.test'))).toBeInstanceOf(Error);
  });

  it('sends no SNI for an IP address host, and uses the system CAs without a CA certificate', () => {
    const options = tlsOptionsOf(settings({ host: '127.0.0.1' }));
    expect(options).not.toHaveProperty('servername');
    expect(options).not.toHaveProperty('ca');
  });
});
