import { parseLoginName, normaliseUserName } from '../directory/login-name.ts';
import { InvalidInputError, showValue } from '../errors.ts';

/**
 * The user name a Negotiate or NTLM handshake ends with, turned into the one name Doorman uses (the
 * directory work's rule, lib/directory/login-name.ts): the short account name, lower-cased. The acceptors
 * give it in three forms:
 *   Kerberos        `alice@EXAMPLE.TEST`  the client principal; the realm must be the joined domain's
 *   ntlm_auth       `EXAMPLE\Alice`       the NetBIOS domain must be the joined domain's
 *                   `alice`               with `winbind use default domain = yes`, the domain is implied
 * Doorman serves one domain: a user of another realm or domain (a trusted forest, say) is refused, not
 * folded onto a local account of the same short name. The helper answers ERR for that refusal.
 */
export const PrincipalErrorCodes = [
  /** A Kerberos principal of another realm. */
  'FOREIGN_REALM',
  /** A DOMAIN\user name of another NetBIOS domain. */
  'FOREIGN_DOMAIN',
  /** Not a user name at all (empty, a service principal with an instance, control characters, …). */
  'INVALID_NAME',
] as const;
export type PrincipalErrorCode = (typeof PrincipalErrorCodes)[number];

export class PrincipalError extends Error {
  readonly code: PrincipalErrorCode;
  constructor(code: PrincipalErrorCode, message: string) {
    super(message);
    this.name = 'PrincipalError';
    this.code = code;
  }
}

export interface JoinedDomain {
  /** The Kerberos realm, the domain's FQDN (`EXAMPLE.TEST`); compared case-insensitively. */
  realm: string;
  /** The NetBIOS domain name (`EXAMPLE`); compared case-insensitively. */
  netbios: string;
}

/** `alice@EXAMPLE.TEST`, `EXAMPLE\Alice`, `alice` → `alice`. Throws PrincipalError for anything else. */
export function userNameOf(principal: string, domain: JoinedDomain): string {
  let parsed;
  try {
    parsed = parseLoginName(principal, 'active-directory', domain.realm);
  } catch (error) {
    if (error instanceof InvalidInputError) {
      const why = error.message.startsWith('login: ') ? error.message.slice('login: '.length) : error.message;
      throw new PrincipalError('INVALID_NAME', `the authenticated name ${why}`);
    }
    throw error;
  }
  // A Kerberos instance (`HTTP/host@REALM`, `alice/admin@REALM`) names a service or a second identity of a
  // user, not the account whose groups the proxy checks.
  if (parsed.account.includes('/')) {
    throw new PrincipalError(
      'INVALID_NAME',
      `the authenticated name ${showValue(principal)} has an instance (a "/"): not a user principal`,
    );
  }
  if (parsed.form === 'upn' && !parsed.inBaseDomain) {
    throw new PrincipalError(
      'FOREIGN_REALM',
      `the principal ${showValue(principal)} is of realm ${showValue(parsed.domain ?? '')}, not the joined realm ${showValue(domain.realm.toUpperCase())}`,
    );
  }
  if (parsed.form === 'down-level' && parsed.domain?.toLowerCase() !== domain.netbios.toLowerCase()) {
    throw new PrincipalError(
      'FOREIGN_DOMAIN',
      `the user ${showValue(principal)} is of domain ${showValue(parsed.domain ?? '')}, not the joined domain ${showValue(domain.netbios.toUpperCase())}`,
    );
  }
  return normaliseUserName(parsed.account);
}
