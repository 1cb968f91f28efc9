import type { Entry } from 'ldapts';
import { bufferValue, firstValue, values } from './entry.ts';
import { ldapFilter } from './escape.ts';
import { normaliseUserName, type LoginName } from './login-name.ts';
import type { DirectoryKind } from './settings.ts';
import { sidToString } from './sid.ts';

/**
 * Finding a user: the search to send for a parsed login name, and what to take from the entry found. Pure;
 * directory.ts sends the search.
 */
export interface DirectoryUser {
  dn: string;
  /** The one name Doorman uses for this user: see normaliseUserName. */
  name: string;
  /** The short name exactly as the directory holds it (for posixGroup memberUid, which compares exactly). */
  shortName: string;
  /**
   * Changes whenever the password or the account's state may have changed; a cached password check is
   * good only for the same token. Undefined when the server shows none of the attributes: then nothing is
   * cached for this user.
   */
  freshness: string | undefined;
  /** AD userAccountControl ACCOUNTDISABLE: refused before any bind. */
  disabled: boolean;
  /** AD: the user's SID and primary group RID, to find the primary group. */
  sid: string | undefined;
  primaryGroupId: number | undefined;
  /** Group DNs from memberOf, where the server keeps it (OpenLDAP's memberof overlay, AD). */
  memberOf: string[];
}

export interface UserSearch {
  filter: string;
  attributes: string[];
  explicitBufferAttributes: string[];
}

/** userAccountControl bit ACCOUNTDISABLE (MS-ADTS §2.2.16). */
const UF_ACCOUNTDISABLE = 0x2;

/** Attributes that change when the password or the account's usability changes. */
const AD_FRESHNESS = ['pwdLastSet', 'userAccountControl', 'lockoutTime', 'accountExpires'] as const;
/**
 * OpenLDAP: entryCSN changes on every modification with microsecond resolution (modifyTimestamp has
 * whole seconds, so a password changed twice in one second would not show); pwdChangedTime and
 * pwdAccountLockedTime come with the ppolicy overlay. Operational attributes: asked for by name.
 */
const OPEN_FRESHNESS = ['entryCSN', 'modifyTimestamp', 'pwdChangedTime', 'pwdAccountLockedTime'] as const;

export function userSearch(login: LoginName, kind: DirectoryKind): UserSearch {
  if (kind === 'active-directory') {
    // objectCategory=person leaves out computer accounts, whose objectClass is also user.
    let match: string;
    if (login.form === 'upn' && login.upn !== undefined) {
      match = login.inBaseDomain
        ? ldapFilter`(|(userPrincipalName=${login.upn})(sAMAccountName=${login.account}))`
        : ldapFilter`(userPrincipalName=${login.upn})`;
    } else {
      match = ldapFilter`(sAMAccountName=${login.account})`;
    }
    return {
      filter: `(&(objectCategory=person)(objectClass=user)${match})`,
      attributes: [
        'sAMAccountName',
        'userPrincipalName',
        ...AD_FRESHNESS,
        'objectSid',
        'primaryGroupID',
        'memberOf',
      ],
      explicitBufferAttributes: ['objectSid', 'objectsid'],
    };
  }
  return {
    filter: ldapFilter`(uid=${login.account})`,
    attributes: ['uid', ...OPEN_FRESHNESS, 'memberOf'],
    explicitBufferAttributes: [],
  };
}

/**
 * The user among the entries a userSearch returned. Undefined when there is none, or when several
 * accounts match and none is the better match (never guess between two people).
 */
export function pickUser(
  entries: readonly Entry[],
  login: LoginName,
  kind: DirectoryKind,
): DirectoryUser | undefined {
  let candidates = [...entries];
  if (candidates.length > 1 && kind === 'active-directory' && login.upn !== undefined) {
    // `alice@example.test` is first a userPrincipalName; the implicit UPN (sAMAccountName@domain) is second.
    const upn = login.upn.toLowerCase();
    const exact = candidates.filter((e) =>
      values(e, 'userPrincipalName').some((v) => v.toLowerCase() === upn),
    );
    if (exact.length > 0) candidates = exact;
  }
  if (candidates.length !== 1) return undefined;
  const entry = candidates[0] as Entry;
  return kind === 'active-directory' ? adUser(entry) : openUser(entry, login);
}

function adUser(entry: Entry): DirectoryUser | undefined {
  const shortName = firstValue(entry, 'sAMAccountName');
  if (shortName === undefined) return undefined;
  const uac = Number(firstValue(entry, 'userAccountControl') ?? '0');
  const sidBytes = bufferValue(entry, 'objectSid');
  const pgid = firstValue(entry, 'primaryGroupID');
  return {
    dn: entry.dn,
    name: normaliseUserName(shortName),
    shortName,
    freshness: freshnessOf(entry, AD_FRESHNESS),
    disabled: Number.isInteger(uac) && (uac & UF_ACCOUNTDISABLE) !== 0,
    sid: sidBytes === undefined ? undefined : sidToString(sidBytes),
    primaryGroupId: pgid === undefined || !/^\d+$/.test(pgid) ? undefined : Number(pgid),
    memberOf: values(entry, 'memberOf'),
  };
}

function openUser(entry: Entry, login: LoginName): DirectoryUser | undefined {
  const uids = values(entry, 'uid');
  // uid may have several values; the one that was asked for is the name.
  const asked = login.account.toLowerCase();
  const shortName = uids.find((u) => u.toLowerCase() === asked) ?? uids[0];
  if (shortName === undefined) return undefined;
  return {
    dn: entry.dn,
    name: normaliseUserName(shortName),
    shortName,
    freshness: freshnessOf(entry, OPEN_FRESHNESS),
    disabled: false,
    sid: undefined,
    primaryGroupId: undefined,
    memberOf: values(entry, 'memberOf'),
  };
}

/** `name=value;…` over the attributes present; undefined when none is. */
export function freshnessOf(entry: Entry, names: readonly string[]): string | undefined {
  const parts = names.flatMap((n) => {
    const v = values(entry, n);
    return v.length === 0 ? [] : [`${n}=${v.join('|')}`];
  });
  return parts.length === 0 ? undefined : parts.join(';');
}
