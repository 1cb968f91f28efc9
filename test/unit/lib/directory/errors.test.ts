import {
  InsufficientAccessError,
  InvalidCredentialsError,
  NoSuchObjectError,
  ProtocolError,
  StrongAuthRequiredError,
  UnavailableError,
  UnknownStatusCodeError,
  UnwillingToPerformError,
} from 'ldapts';
import { describe, expect, it } from 'vitest';
import {
  AD_BIND_SUB_CODES,
  adSubCodeOf,
  describeAdSubCode,
  DirectoryError,
  toDirectoryError,
  type ErrorContext,
} from '../../../../lib/directory/errors.ts';

const SERVER = 'dc1.example.test:636';
const BIND: ErrorContext = {
  server: SERVER,
  phase: 'bind',
  bindDn: 'CN=Squid Bind,CN=Users,DC=example,DC=test',
};
const SEARCH: ErrorContext = { server: SERVER, phase: 'search', base: 'DC=example,DC=test' };

/** What AD (and Samba) put in a failed bind's diagnostic message. */
const adDiagnostic = (subCode: string) =>
  `80090308: LdapErr: DSID-0C09042A, comment: AcceptSecurityContext error, data ${subCode}, v3839`;

const nodeError = (code: string, message = code) => Object.assign(new Error(message), { code });

describe('AD bind sub-codes', () => {
  it('finds the sub-code in the diagnostic message', () => {
    expect(adSubCodeOf(adDiagnostic('52e'))).toBe('52e');
    expect(adSubCodeOf(adDiagnostic('775'))).toBe('775');
    expect(adSubCodeOf('... error, data 52E, v1db1')).toBe('52e');
    expect(adSubCodeOf('Invalid credentials')).toBeUndefined();
  });

  it.each([
    ['525', 'user not found'],
    ['52e', 'invalid credentials (wrong password)'],
    ['530', 'not permitted to log on at this time (logon hours)'],
    ['531', 'not permitted to log on from this workstation'],
    ['532', 'password expired'],
    ['533', 'account disabled'],
    ['701', 'account expired'],
    ['773', 'the user must reset the password'],
    ['775', 'account locked out'],
  ])('%s is "%s"', (subCode, words) => {
    expect(describeAdSubCode(subCode)).toBe(words);
    expect(AD_BIND_SUB_CODES).toHaveProperty(subCode, words);
  });

  it('says an unknown sub-code as it is', () => {
    expect(describeAdSubCode('abc')).toBe('Windows error abc');
    expect(describeAdSubCode('constructor')).toBe('Windows error constructor');
  });
});

describe('toDirectoryError: results from the server', () => {
  it('a refused bind account, with the AD sub-code in words', () => {
    const error = toDirectoryError(new InvalidCredentialsError(adDiagnostic('52e')), BIND);
    expect(error).toBeInstanceOf(DirectoryError);
    expect(error.code).toBe('INVALID_CREDENTIALS');
    expect(error.message).toBe(
      'dc1.example.test:636 refused the bind as "CN=Squid Bind,CN=Users,DC=example,DC=test": ' +
        'invalid credentials (wrong password) (AD data 52e)',
    );
    expect(error.adSubCode).toBe('52e');
    expect(error.resultCode).toBe(49);
  });

  it.each(Object.entries(AD_BIND_SUB_CODES))('AD data %s: "%s" in the message', (subCode, words) => {
    const error = toDirectoryError(new InvalidCredentialsError(adDiagnostic(subCode)), BIND);
    expect(error.code).toBe('INVALID_CREDENTIALS');
    expect(error.message).toContain(`${words} (AD data ${subCode})`);
  });

  it('a refused bind without a sub-code (OpenLDAP)', () => {
    const error = toDirectoryError(new InvalidCredentialsError(), BIND);
    expect(error.code).toBe('INVALID_CREDENTIALS');
    expect(error.message).toMatch(/refused the bind as ".*": invalid credentials: wrong DN or password$/);
    expect(error.adSubCode).toBeUndefined();
  });

  it('strong authentication required: says to use LDAPS or StartTLS', () => {
    const error = toDirectoryError(
      new StrongAuthRequiredError('BindSimple: Transport encryption required.'),
      BIND,
    );
    expect(error.code).toBe('STRONG_AUTH_REQUIRED');
    expect(error.message).toBe(
      'dc1.example.test:636 refuses a simple bind over an unencrypted connection: use LDAPS or StartTLS ' +
        '(server said: BindSimple: Transport encryption required.)',
    );
  });

  it('no such object on a search: the base does not exist', () => {
    const error = toDirectoryError(
      new NoSuchObjectError('0000208D: NameErr: DSID-03100238, problem 2001 (NO_OBJECT)'),
      { server: SERVER, phase: 'search', base: 'DC=nope,DC=test' },
    );
    expect(error.code).toBe('NO_SUCH_BASE');
    expect(error.message).toBe('the search base "DC=nope,DC=test" does not exist on dc1.example.test:636');
  });

  it('a referral (result 10) on a search: the server does not hold the base', () => {
    const error = toDirectoryError(new UnknownStatusCodeError(10, 'Referral'), SEARCH);
    expect(error.code).toBe('NO_SUCH_BASE');
    expect(error.message).toMatch(/does not hold the search base "DC=example,DC=test"/);
  });

  it('insufficient access, unavailable, other refusals', () => {
    expect(toDirectoryError(new InsufficientAccessError('no'), SEARCH).code).toBe('INSUFFICIENT_ACCESS');
    expect(toDirectoryError(new UnavailableError('shutting down'), SEARCH).code).toBe('UNREACHABLE');
    const other = toDirectoryError(new UnwillingToPerformError('nope'), SEARCH);
    expect(other.code).toBe('REFUSED');
    expect(other.message).toBe(
      'dc1.example.test:636 refused the search (LDAP result 53) (server said: nope)',
    );
  });

  it('any result during StartTLS is a TLS problem', () => {
    const starttls = { server: SERVER, phase: 'starttls' } as const;
    expect(toDirectoryError(new ProtocolError('unsupported extended operation'), starttls)).toMatchObject({
      code: 'TLS',
      message: 'dc1.example.test:636 does not support StartTLS (server said: unsupported extended operation)',
    });
    expect(toDirectoryError(new UnavailableError('TLS not configured'), starttls).code).toBe('TLS');
  });
});

describe('toDirectoryError: the network and TLS', () => {
  it.each([
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'the server certificate is self-signed'],
    ['SELF_SIGNED_CERT_IN_CHAIN', 'issued by a CA that is not trusted'],
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'issued by an unknown CA'],
    ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'issued by an unknown CA'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'not for this host name (name mismatch)'],
    ['CERT_HAS_EXPIRED', 'has expired'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', 'did not answer in TLS'],
  ])('%s: a TLS error in words', (code, words) => {
    const error = toDirectoryError(nodeError(code), { server: SERVER, phase: 'connect' });
    expect(error.code).toBe('TLS');
    expect(error.message).toMatch(/^TLS with dc1.example.test:636 failed: /);
    expect(error.message).toContain(words);
    expect(error.message).toContain(`(${code})`);
  });

  it.each([
    ['ECONNREFUSED', 'connection refused'],
    ['ENOTFOUND', 'unknown host name'],
    ['EHOSTUNREACH', 'no route to host'],
    ['ECONNRESET', 'the connection was reset by the server'],
  ])('%s: unreachable', (code, words) => {
    const error = toDirectoryError(nodeError(code), { server: SERVER, phase: 'connect' });
    expect(error.code).toBe('UNREACHABLE');
    expect(error.message).toMatch(new RegExp(`^cannot reach dc1.example.test:636: ${words}`));
  });

  it("ldapts's own timeouts and lost connections", () => {
    const ctx = { server: SERVER, phase: 'search' } as const;
    expect(toDirectoryError(new Error('Connection timeout'), ctx)).toMatchObject({
      code: 'TIMEOUT',
      message: 'dc1.example.test:636: no connection within the connect timeout',
    });
    expect(toDirectoryError(new Error('SearchRequest: Operation timed out'), ctx)).toMatchObject({
      code: 'TIMEOUT',
      message: 'dc1.example.test:636: no answer within the timeout (search)',
    });
    expect(toDirectoryError(nodeError('ETIMEDOUT'), ctx).code).toBe('TIMEOUT');
    expect(
      toDirectoryError(
        new Error(
          'Connection closed before message response was received. Message type: SearchRequest (0x63)',
        ),
        ctx,
      ),
    ).toMatchObject({
      code: 'UNREACHABLE',
      message: 'dc1.example.test:636: the connection was lost (search)',
    });
    expect(toDirectoryError(new Error('connection lost: not reconnecting this client'), ctx).code).toBe(
      'UNREACHABLE',
    );
  });

  it('anything else is a protocol error; a DirectoryError passes through', () => {
    expect(toDirectoryError(new Error('weird'), SEARCH)).toMatchObject({
      code: 'PROTOCOL',
      message: 'dc1.example.test:636: unexpected search failure: weird',
    });
    const original = new DirectoryError('CLOSED', 'closed');
    expect(toDirectoryError(original, SEARCH)).toBe(original);
    expect(toDirectoryError('a string', SEARCH).code).toBe('PROTOCOL');
  });

  it('never carries a password, even one the caller was holding', () => {
    const password = 'S3cret!pw';
    const errors = [
      toDirectoryError(new InvalidCredentialsError(adDiagnostic('52e')), BIND),
      toDirectoryError(nodeError('ECONNREFUSED'), BIND),
      toDirectoryError(new StrongAuthRequiredError(), BIND),
    ];
    for (const error of errors) expect(error.message).not.toContain(password);
  });
});
