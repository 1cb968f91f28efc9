import { InvalidCredentialsError } from 'ldapts';
import { adSubCodeOf } from './errors.ts';

/**
 * The outcome of checking a user's password. A refusal is the user's fault (Squid's helper answers ERR);
 * a directory that cannot be asked is a DirectoryError instead (BH). `reason` is for logs and the portal.
 */
export const PasswordRefusals = [
  /** Refused before any bind: an LDAP simple bind with an empty password is an anonymous bind, and succeeds. */
  'empty-password',
  /** No account can have this name (empty, too long, control characters, a form this directory lacks). */
  'invalid-name',
  /** No such user, or several accounts match (never guess). */
  'unknown-user',
  'wrong-password',
  'account-disabled',
  'account-locked',
  'account-expired',
  'password-expired',
  'must-change-password',
  /** Not at this time, not from this workstation, not this logon type. */
  'logon-restricted',
] as const;
export type PasswordRefusal = (typeof PasswordRefusals)[number];

export type PasswordCheck =
  { ok: true; user: string; cached: boolean } | { ok: false; reason: PasswordRefusal; user?: string };

/** AD bind sub-codes (see errors.ts) as refusals. */
const AD_REFUSALS: Record<string, PasswordRefusal> = {
  '525': 'unknown-user',
  '52e': 'wrong-password',
  '530': 'logon-restricted',
  '531': 'logon-restricted',
  '534': 'logon-restricted',
  '532': 'password-expired',
  '533': 'account-disabled',
  '701': 'account-expired',
  '773': 'must-change-password',
  '775': 'account-locked',
};

/**
 * What a failed bind AS THE USER means: invalidCredentials (49) is a refusal, in AD's words when its
 * diagnostic carries a sub-code; anything else is undefined (not the user's fault: a DirectoryError).
 */
export function refusalOfUserBind(error: unknown): PasswordRefusal | undefined {
  if (!(error instanceof InvalidCredentialsError)) return undefined;
  const subCode = adSubCodeOf(error.message);
  return (subCode === undefined ? undefined : AD_REFUSALS[subCode]) ?? 'wrong-password';
}
