import { InvalidInputError, showValue } from '../errors.ts';
import type { DirectoryKind } from './settings.ts';

/**
 * What a user types as a login name, and the one name Doorman uses for that user everywhere.
 *
 * Accepted forms:
 *   Active Directory   `alice`               the sAMAccountName
 *                      `alice@example.test`  a user principal name (userPrincipalName); when the part after `@`
 *                                            is the domain of the search base, also the implicit UPN
 *                                            sAMAccountName@domain that AD accepts for accounts without one
 *                      `EXAMPLE\alice`       down-level logon name: the sAMAccountName after the backslash. The
 *                                            domain before it is not checked: Doorman serves one domain, and
 *                                            the password (or Squid's own authentication) decides.
 *   open directory     `alice`               the uid, as typed (uids may contain `@`, e.g. mail-style uids)
 *                      `alice@example.test`  when the part after `@` is the domain of the search base, the uid
 *                                            `alice` (so people used to AD-style names are not turned away);
 *                                            with any other domain, the whole string is the uid
 *                      `EXAMPLE\alice`       refused: there are no down-level names in an open directory, and
 *                                            guessing which part is meant would let two inputs mean one user
 *
 * White space around the name is dropped; then 1–256 characters, none of them control characters. The
 * name Doorman uses afterwards (session DB, Squid's `user=`, the portal) is NOT what was typed but the
 * directory's short name for the account it found, AD sAMAccountName or uid, lower-cased: see
 * normaliseUserName.
 */
export const MAX_LOGIN_NAME_LENGTH = 256;

export const LoginForms = ['short', 'upn', 'down-level'] as const;
export type LoginForm = (typeof LoginForms)[number];

export interface LoginName {
  form: LoginForm;
  /** The short name to look up (sAMAccountName or uid); for a UPN, the part before `@`. */
  account: string;
  /** The user principal name as typed (form 'upn' only). */
  upn?: string;
  /** The part after `@` or before `\`, as typed. */
  domain?: string;
  /** For a UPN: its domain is the search base's, so `account` may be looked up as the short name too. */
  inBaseDomain: boolean;
  /** Equal for inputs that are looked up the same way (`alice`, `ALICE`, `EXAMPLE\alice`): a cache key. */
  key: string;
}

// C0 controls, DEL and C1 controls.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Parse a typed login name for a directory of `kind` whose search base names the DNS domain `baseDomain`
 * (`example.test` for DC=example,DC=test). Throws InvalidInputError (field `login`) for a name no account
 * can have.
 */
export function parseLoginName(input: string, kind: DirectoryKind, baseDomain?: string): LoginName {
  const invalid = (why: string) => new InvalidInputError('login', `${showValue(input)} ${why}`);
  if (!input.isWellFormed()) throw invalid('is not valid Unicode');
  const name = input.trim();
  if (name.length === 0) throw invalid('is empty');
  if ([...name].length > MAX_LOGIN_NAME_LENGTH) {
    throw invalid(`is longer than ${MAX_LOGIN_NAME_LENGTH} characters`);
  }
  if (CONTROL.test(name)) throw invalid('contains a control character');
  const domainMatches = (d: string) =>
    baseDomain !== undefined && d.toLowerCase() === baseDomain.toLowerCase();

  const backslash = name.indexOf('\\');
  if (backslash !== -1) {
    if (kind === 'open-directory') {
      throw invalid('is a Windows DOMAIN\\user name; give the user name (uid) alone');
    }
    const domain = name.slice(0, backslash);
    const account = name.slice(backslash + 1);
    if (domain.length === 0 || account.length === 0 || account.includes('\\') || account.includes('@')) {
      throw invalid('is not of the form DOMAIN\\user');
    }
    return { form: 'down-level', account, domain, inBaseDomain: false, key: shortKey(account) };
  }

  const at = name.lastIndexOf('@');
  if (at !== -1) {
    const account = name.slice(0, at);
    const domain = name.slice(at + 1);
    if (kind === 'open-directory') {
      if (account.length > 0 && domainMatches(domain)) {
        return { form: 'short', account, domain, inBaseDomain: true, key: shortKey(account) };
      }
      return { form: 'short', account: name, inBaseDomain: false, key: shortKey(name) };
    }
    if (account.length === 0 || domain.length === 0 || account.includes('@')) {
      throw invalid('is not of the form user@domain');
    }
    return {
      form: 'upn',
      account,
      upn: name,
      domain,
      inBaseDomain: domainMatches(domain),
      key: `upn:${name.toLowerCase()}`,
    };
  }
  return { form: 'short', account: name, inBaseDomain: false, key: shortKey(name) };
}

/**
 * The one form of a user's name: the directory's short name for the account (AD sAMAccountName, open
 * directory uid) exactly as the directory holds it, lower-cased. Both directories compare these names
 * case-insensitively, so `Alice`, `ALICE`, `alice@example.test` and `EXAMPLE\alice` all become `alice`.
 */
export function normaliseUserName(directoryShortName: string): string {
  return directoryShortName.toLowerCase();
}

function shortKey(account: string): string {
  return `short:${account.toLowerCase()}`;
}
