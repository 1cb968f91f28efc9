import type { Entry } from 'ldapts';
import { dnKey, firstRdnValue, parseDn } from './dn.ts';
import { firstValue } from './entry.ts';
import { ldapFilter } from './escape.ts';
import type { DirectoryKind } from './settings.ts';

/**
 * Groups: the filters, the upward walk through nested groups, and matching a group name. Pure; directory.ts
 * sends the searches.
 */
export interface DirectoryGroup {
  dn: string;
  /** The group's cn: what administrators write in squid.conf (`"Staff Users"`). */
  name: string;
}

/** objectClasses of user groups in an open directory: OpenLDAP's three, and Apple Open Directory's. */
export const OPEN_GROUP_CLASSES = [
  'groupOfNames',
  'groupOfUniqueNames',
  'posixGroup',
  'apple-group',
] as const;

const OPEN_GROUP = `(|${OPEN_GROUP_CLASSES.map((c) => `(objectClass=${c})`).join('')})`;

/** The user groups "Save & apply" counts. */
export function groupCountFilter(kind: DirectoryKind): string {
  return kind === 'active-directory' ? '(objectClass=group)' : OPEN_GROUP;
}

/**
 * AD: the groups `memberDns` belong to, directly or through nesting, in one search: the matching rule
 * LDAP_MATCHING_RULE_IN_CHAIN (1.2.840.113556.1.4.1941) makes AD follow `member` transitively. Give the
 * user's DN and, since AD keeps primary group membership out of `member`, the primary group's DN too.
 */
export function adGroupsFilter(memberDns: readonly string[]): string {
  const chains = memberDns.map((dn) => ldapFilter`(member:1.2.840.113556.1.4.1941:=${dn})`).join('');
  return `(&(objectClass=group)${memberDns.length === 1 ? chains : `(|${chains})`})`;
}

/** AD: the group with this SID (string form S-1-5-21-…, which AD accepts in filters). */
export function sidFilter(sid: string): string {
  return ldapFilter`(objectSid=${sid})`;
}

/**
 * Open directory: the groups that list any of `memberDns` as a member (groupOfNames `member`,
 * groupOfUniqueNames `uniqueMember`), or, for the user only, list `uid` in posixGroup `memberUid`.
 */
export function openParentsFilter(memberDns: readonly string[], uid?: string): string {
  const clauses = memberDns.map((dn) => ldapFilter`(member=${dn})(uniqueMember=${dn})`);
  if (uid !== undefined) clauses.push(ldapFilter`(memberUid=${uid})`);
  return `(&${OPEN_GROUP}(|${clauses.join('')}))`;
}

/** A group from a search entry: its cn, else the value of its first RDN. */
export function groupOf(entry: Entry): DirectoryGroup {
  return { dn: entry.dn, name: firstValue(entry, 'cn') ?? firstRdnValue(entry.dn) ?? entry.dn };
}

/** A group known only by its DN (a memberOf value): named by its first RDN's value. */
export function groupFromDn(dn: string): DirectoryGroup {
  return { dn, name: firstRdnValue(dn) ?? dn };
}

/**
 * The groups that have any of `memberDns` as a direct member. `depth` is 1 for the user's own groups (the
 * only level where posixGroup memberUid and the user's memberOf apply).
 */
export type ParentLookup = (
  memberDns: readonly string[],
  depth: number,
) => Promise<readonly DirectoryGroup[]>;

export interface Walk {
  groups: DirectoryGroup[];
  /** The depth limit stopped the walk while there were still groups to look above. */
  truncated: boolean;
}

export const MAX_GROUP_DEPTH = 8;
/** Members per lookup: keeps each filter a reasonable size for a user in hundreds of groups. */
export const LOOKUP_BATCH = 50;

/**
 * Walk up from `start` through the groups it is in, then the groups those are in, and so on, one lookup per
 * level (batched), at most `maxDepth` levels. Each group is visited once (compared by dnKey), so a cycle
 * (A in B, B in A) ends, and the start itself never comes back as its own group.
 */
export async function walkUp(
  startDn: string,
  lookup: ParentLookup,
  maxDepth = MAX_GROUP_DEPTH,
): Promise<Walk> {
  const visited = new Set<string>([dnKey(startDn)]);
  const groups: DirectoryGroup[] = [];
  let frontier: string[] = [startDn];
  for (let depth = 1; depth <= maxDepth; depth++) {
    const batches: string[][] = [];
    for (let i = 0; i < frontier.length; i += LOOKUP_BATCH) batches.push(frontier.slice(i, i + LOOKUP_BATCH));
    const found = (await Promise.all(batches.map((batch) => lookup(batch, depth)))).flat();
    const next: string[] = [];
    for (const group of found) {
      const key = dnKey(group.dn);
      if (visited.has(key)) continue;
      visited.add(key);
      groups.push(group);
      next.push(group.dn);
    }
    if (next.length === 0) return { groups, truncated: false };
    frontier = next;
  }
  return { groups, truncated: true };
}

/**
 * Whether `wanted` names one of `groups`: its cn, compared case-insensitively (after Unicode NFC, so a
 * composed and a decomposed `Ü` are equal), or its full DN (compared by dnKey).
 */
export function matchesGroup(groups: readonly DirectoryGroup[], wanted: string): boolean {
  const name = foldName(wanted);
  if (name.length === 0) return false;
  const rdns = wanted.includes('=') ? parseDn(wanted.trim()) : undefined;
  const dn = rdns !== undefined && rdns.length > 0 ? dnKey(wanted) : undefined;
  return groups.some((g) => foldName(g.name) === name || (dn !== undefined && dnKey(g.dn) === dn));
}

function foldName(name: string): string {
  return name.trim().normalize('NFC').toLowerCase();
}

/** Groups in a stable order without repeats (by dnKey), for answers and tests. */
export function uniqueGroups(groups: Iterable<DirectoryGroup>): DirectoryGroup[] {
  const seen = new Map<string, DirectoryGroup>();
  for (const g of groups) {
    const key = dnKey(g.dn);
    if (!seen.has(key)) seen.set(key, g);
  }
  return [...seen.values()];
}
