import { describe, expect, it } from 'vitest';
import { PrincipalError, userNameOf, type PrincipalErrorCode } from '../../../../lib/seamless/principal.ts';

const DOMAIN = { realm: 'EXAMPLE.TEST', netbios: 'EXAMPLE' };

function refusal(name: string): PrincipalError {
  try {
    userNameOf(name, DOMAIN);
  } catch (error) {
    if (error instanceof PrincipalError) return error;
    throw error;
  }
  throw new Error(`${JSON.stringify(name)} was accepted`);
}
const expectRefused = (name: string, code: PrincipalErrorCode, message: string) => {
  const error = refusal(name);
  expect({ code: error.code, name: error.name, message: error.message }).toEqual({
    code,
    name: 'PrincipalError',
    message,
  });
};

describe('userNameOf', () => {
  it('turns a Kerberos principal of the joined realm into the short name, realm case-insensitive', () => {
    expect(userNameOf('alice@EXAMPLE.TEST', DOMAIN)).toBe('alice');
    expect(userNameOf('Alice@example.test', DOMAIN)).toBe('alice');
    expect(userNameOf('alice@Example.Test', { realm: 'example.test', netbios: 'example' })).toBe('alice');
  });

  it('turns a DOMAIN\\user name of the joined NetBIOS domain into the short name', () => {
    expect(userNameOf('EXAMPLE\\Alice', DOMAIN)).toBe('alice');
    expect(userNameOf('example\\ALICE', DOMAIN)).toBe('alice');
  });

  it('takes a bare name (winbind use default domain) as it is, lower-cased', () => {
    expect(userNameOf('alice', DOMAIN)).toBe('alice');
    expect(userNameOf('Bob.Smith', DOMAIN)).toBe('bob.smith');
    expect(userNameOf('al ice', DOMAIN)).toBe('al ice');
    expect(userNameOf('PC1$@EXAMPLE.TEST', DOMAIN)).toBe('pc1$');
  });

  it('refuses another realm or domain, naming it and the joined one', () => {
    expectRefused(
      'alice@OTHER.TEST',
      'FOREIGN_REALM',
      'the principal "alice@OTHER.TEST" is of realm "OTHER.TEST", not the joined realm "EXAMPLE.TEST"',
    );
    // A sub-domain is another realm, not this one.
    expect(refusal('alice@CHILD.EXAMPLE.TEST').code).toBe('FOREIGN_REALM');
    expectRefused(
      'OTHER\\alice',
      'FOREIGN_DOMAIN',
      'the user "OTHER\\\\alice" is of domain "OTHER", not the joined domain "EXAMPLE"',
    );
    // The DNS domain is not the NetBIOS name: ntlm_auth always gives the NetBIOS one.
    expect(refusal('EXAMPLE.TEST\\alice').code).toBe('FOREIGN_DOMAIN');
  });

  it('refuses names that are no user: empty, a service principal, malformed forms', () => {
    expectRefused('', 'INVALID_NAME', 'the authenticated name "" is empty');
    expectRefused(
      'HTTP/proxy.example.test@EXAMPLE.TEST',
      'INVALID_NAME',
      'the authenticated name "HTTP/proxy.example.test@EXAMPLE.TEST" has an instance (a "/"): not a user principal',
    );
    expect(refusal('alice/admin@EXAMPLE.TEST').code).toBe('INVALID_NAME');
    expectRefused(
      '@EXAMPLE.TEST',
      'INVALID_NAME',
      'the authenticated name "@EXAMPLE.TEST" is not of the form user@domain',
    );
    expect(refusal('EXAMPLE\\').code).toBe('INVALID_NAME');
    expect(refusal('alice\u0000@EXAMPLE.TEST').code).toBe('INVALID_NAME');
  });
});
