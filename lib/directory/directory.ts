import type { Client, Entry } from 'ldapts';
import { systemClock, type Clock } from '../clock.ts';
import { InvalidInputError } from '../errors.ts';
import type { Log } from '../log.ts';
import { BindPool } from './bind-pool.ts';
import { dnsDomainOf } from './dn.ts';
import { DirectoryError } from './errors.ts';
import { GroupCache } from './group-cache.ts';
import {
  adGroupsFilter,
  groupCountFilter,
  groupFromDn,
  groupOf,
  matchesGroup,
  MAX_GROUP_DEPTH,
  openParentsFilter,
  sidFilter,
  uniqueGroups,
  walkUp,
  type DirectoryGroup,
} from './groups.ts';
import { parseLoginName, type LoginName } from './login-name.ts';
import { PasswordCache } from './password-cache.ts';
import type { PasswordCheck } from './password-check.ts';
import { SearchPool } from './search-pool.ts';
import type { DirectorySettings } from './settings.ts';
import { domainSidOf, sidWithRid } from './sid.ts';
import { pickUser, userSearch, type DirectoryUser } from './users.ts';

export interface DirectoryOptions {
  clock: Clock;
  log: Log;
  /** Bound connections that searches are pipelined over (default 2). */
  searchConnections?: number;
  /** Connections for user binds, one bind at a time each (default 8). */
  bindConnections?: number;
  /** Levels of nested groups followed in an open directory (default 8). */
  maxGroupDepth?: number;
}

/** Entries per page of a paged search (RFC 2696): under AD's default MaxPageSize of 1000. */
const PAGE_SIZE = 500;
/** More matches than this for one login name is a wrong filter or a wrong directory, not a user. */
const USER_SIZE_LIMIT = 10;

/**
 * One directory, as configured: count its groups, find users, check passwords, answer group membership.
 * Many calls may be in flight at once (a helper gets up to Squid's concurrency= requests together): searches
 * share a few bound connections, password binds take turns on a small pool of others, and identical group
 * lookups in flight are made once. Errors from the directory (unreachable, timeout, TLS, refused bind
 * account) are DirectoryErrors, for a helper's BH; the next call tries to connect again by itself.
 */
export class Directory {
  readonly settings: DirectorySettings;
  readonly #log: Log;
  readonly #search: SearchPool;
  readonly #binds: BindPool;
  readonly #passwords: PasswordCache;
  readonly #groups: GroupCache<readonly DirectoryGroup[] | undefined>;
  readonly #primaryGroups: GroupCache<DirectoryGroup | undefined>;
  readonly #baseDomain: string | undefined;
  readonly #maxDepth: number;

  constructor(settings: DirectorySettings, password: string, options: DirectoryOptions) {
    this.settings = settings;
    this.#log = options.log;
    this.#search = new SearchPool({
      settings,
      credentials: { dn: settings.bindDn, password },
      clock: options.clock,
      log: options.log,
      size: options.searchConnections ?? 2,
    });
    this.#binds = new BindPool({ settings, size: options.bindConnections ?? 8 });
    this.#passwords = new PasswordCache({ ttlSeconds: settings.passwordCacheSeconds, clock: options.clock });
    const groupCache = { ttlSeconds: settings.groupCacheSeconds, clock: options.clock };
    this.#groups = new GroupCache(groupCache);
    this.#primaryGroups = new GroupCache(groupCache);
    this.#baseDomain = dnsDomainOf(settings.baseDn);
    this.#maxDepth = options.maxGroupDepth ?? MAX_GROUP_DEPTH;
  }

  /** The user groups under the search base (what Save & apply reports), by a paged search for no attributes. */
  async countGroups(): Promise<number> {
    const base = this.settings.baseDn;
    const filter = groupCountFilter(this.settings.kind);
    return this.#search.run(base, async (client) => {
      let count = 0;
      const pages = client.searchPaginated(base, {
        scope: 'sub',
        filter,
        attributes: ['1.1'],
        paged: { pageSize: PAGE_SIZE },
      });
      for await (const page of pages) count += page.searchEntries.length;
      return count;
    });
  }

  /**
   * The account a typed login name means, or undefined when there is none (or more than one). Throws
   * InvalidInputError for a name no account can have, DirectoryError when the directory cannot be asked.
   */
  async findUser(login: string): Promise<DirectoryUser | undefined> {
    return this.#lookupUser(this.#parse(login));
  }

  /**
   * Check a user's password: search the account with the bind account, then bind as it on a connection of
   * the bind pool. An empty password is refused before anything is sent. A refused password is never
   * retried. A success may come from the password cache, but only for the same freshness token as the
   * search just returned, so a changed password or a disabled account is always seen.
   */
  async checkPassword(login: string, password: string): Promise<PasswordCheck> {
    if (password.length === 0) return { ok: false, reason: 'empty-password' };
    let parsed: LoginName;
    try {
      parsed = this.#parse(login);
    } catch (error) {
      if (error instanceof InvalidInputError) return { ok: false, reason: 'invalid-name' };
      throw error;
    }
    const user = await this.#lookupUser(parsed);
    if (user === undefined) return { ok: false, reason: 'unknown-user' };
    if (user.disabled) return { ok: false, reason: 'account-disabled', user: user.name };
    if (this.#passwords.matches(user.dn, user.freshness, password)) {
      return { ok: true, user: user.name, cached: true };
    }
    const refusal = await this.#binds.check(user.dn, password);
    if (refusal !== undefined) return { ok: false, reason: refusal, user: user.name };
    this.#passwords.remember(user.dn, user.freshness, password);
    return { ok: true, user: user.name, cached: false };
  }

  /**
   * Every group the user is in, nested groups and (AD) the primary group included; undefined for an
   * unknown user or a name no account can have. Cached per login for groupCacheSeconds.
   */
  async groupsOf(login: string): Promise<readonly DirectoryGroup[] | undefined> {
    let parsed: LoginName;
    try {
      parsed = this.#parse(login);
    } catch (error) {
      if (error instanceof InvalidInputError) return undefined;
      throw error;
    }
    return this.#groups.get(parsed.key, async () => {
      const user = await this.#lookupUser(parsed);
      if (user === undefined) return undefined;
      return this.settings.kind === 'active-directory' ? this.#adGroups(user) : this.#openGroups(user);
    });
  }

  /** Whether the user is in the group named by its cn (case-insensitive) or its full DN. */
  async isMember(login: string, group: string): Promise<boolean> {
    const groups = await this.groupsOf(login);
    return groups !== undefined && matchesGroup(groups, group);
  }

  async close(): Promise<void> {
    await Promise.all([this.#search.close(), this.#binds.close()]);
  }

  #parse(login: string): LoginName {
    return parseLoginName(login, this.settings.kind, this.#baseDomain);
  }

  async #lookupUser(login: LoginName): Promise<DirectoryUser | undefined> {
    const search = userSearch(login, this.settings.kind);
    const entries = await this.#searchAll(search.filter, search.attributes, {
      sizeLimit: USER_SIZE_LIMIT,
      explicitBufferAttributes: search.explicitBufferAttributes,
    });
    const user = pickUser(entries, login, this.settings.kind);
    if (user === undefined && entries.length > 1) {
      this.#log(`directory: ${entries.length} accounts match one login name; refusing to choose`);
    }
    return user;
  }

  /** AD: nested groups through LDAP_MATCHING_RULE_IN_CHAIN, from the user and from its primary group. */
  async #adGroups(user: DirectoryUser): Promise<DirectoryGroup[]> {
    let primary: DirectoryGroup | undefined;
    const domainSid = user.sid === undefined ? undefined : domainSidOf(user.sid);
    if (domainSid !== undefined && user.primaryGroupId !== undefined) {
      const sid = sidWithRid(domainSid, user.primaryGroupId);
      primary = await this.#primaryGroups.get(sid, async () => {
        const found = await this.#searchAll(sidFilter(sid), ['cn']);
        return found.length === 1 ? groupOf(found[0] as Entry) : undefined;
      });
    }
    const from = primary === undefined ? [user.dn] : [user.dn, primary.dn];
    const nested = (await this.#searchAll(adGroupsFilter(from), ['cn'])).map(groupOf);
    return uniqueGroups(primary === undefined ? nested : [primary, ...nested]);
  }

  /**
   * Open directory: walk up member/uniqueMember (and posixGroup memberUid for the user), one search per
   * level, with a depth limit and each group visited once; the user's memberOf, where the server keeps it,
   * adds the groups it names at the first level.
   */
  async #openGroups(user: DirectoryUser): Promise<DirectoryGroup[]> {
    const fromMemberOf = user.memberOf.map(groupFromDn);
    const walk = await walkUp(
      user.dn,
      async (memberDns, depth) => {
        const filter = openParentsFilter(memberDns, depth === 1 ? user.shortName : undefined);
        const found = (await this.#searchAll(filter, ['cn'])).map(groupOf);
        return depth === 1 ? uniqueGroups([...found, ...fromMemberOf]) : found;
      },
      this.#maxDepth,
    );
    if (walk.truncated) {
      this.#log(`directory: groups of ${user.name} nest deeper than ${this.#maxDepth} levels; stopped there`);
    }
    return walk.groups;
  }

  /** A paged subtree search under the base; search references (referrals) are ignored, never chased. */
  #searchAll(
    filter: string,
    attributes: string[],
    options: { sizeLimit?: number; explicitBufferAttributes?: string[] } = {},
  ): Promise<Entry[]> {
    const base = this.settings.baseDn;
    return this.#search.run(base, async (client: Client) => {
      const result = await client.search(base, {
        scope: 'sub',
        filter,
        attributes,
        ...(options.sizeLimit === undefined
          ? { paged: { pageSize: PAGE_SIZE } }
          : { sizeLimit: options.sizeLimit }),
        ...(options.explicitBufferAttributes === undefined
          ? {}
          : { explicitBufferAttributes: options.explicitBufferAttributes }),
      });
      return result.searchEntries;
    });
  }
}

export type SettingsTest = { ok: true; groupCount: number } | { ok: false; error: DirectoryError };

/**
 * Try settings before they are saved: connect, bind as the bind account, count the user groups. Used by
 * Save & apply; a DirectoryError says what is wrong, in words.
 */
export async function testSettings(
  settings: DirectorySettings,
  password: string,
  options: Partial<DirectoryOptions> = {},
): Promise<SettingsTest> {
  const directory = new Directory(settings, password, {
    clock: options.clock ?? systemClock,
    log: options.log ?? (() => {}),
    searchConnections: 1,
    bindConnections: 1,
  });
  try {
    return { ok: true, groupCount: await directory.countGroups() };
  } catch (error) {
    if (error instanceof DirectoryError) return { ok: false, error };
    throw error;
  } finally {
    await directory.close();
  }
}
