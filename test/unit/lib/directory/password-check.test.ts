import { InvalidCredentialsError, StrongAuthRequiredError } from 'ldapts';
import { describe, expect, it } from 'vitest';
import { refusalOfUserBind } from '../../../../lib/directory/password-check.ts';

const ad = (subCode: string) =>
  new InvalidCredentialsError(
    `80090308: LdapErr: DSID-0C09042A, comment: AcceptSecurityContext error, data ${subCode}, v3839`,
  );

describe('refusalOfUserBind', () => {
  it.each([
    ['525', 'unknown-user'],
    ['52e', 'wrong-password'],
    ['530', 'logon-restricted'],
    ['531', 'logon-restricted'],
    ['532', 'password-expired'],
    ['533', 'account-disabled'],
    ['701', 'account-expired'],
    ['773', 'must-change-password'],
    ['775', 'account-locked'],
  ])('AD data %s: %s', (subCode, reason) => {
    expect(refusalOfUserBind(ad(subCode))).toBe(reason);
  });

  it('invalid credentials without a sub-code (OpenLDAP), or with an unknown one: wrong-password', () => {
    expect(refusalOfUserBind(new InvalidCredentialsError())).toBe('wrong-password');
    expect(refusalOfUserBind(ad('999'))).toBe('wrong-password');
  });

  it('anything else is not a refusal (the directory is at fault: the caller throws)', () => {
    expect(refusalOfUserBind(new StrongAuthRequiredError())).toBeUndefined();
    expect(refusalOfUserBind(new Error('Connection closed'))).toBeUndefined();
    expect(refusalOfUserBind(undefined)).toBeUndefined();
  });
});
