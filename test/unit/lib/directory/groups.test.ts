import type { AndFilter, EqualityFilter, ExtensibleFilter, OrFilter } from 'ldapts';
import { FilterParser } from 'ldapts';
import { describe, expect, it } from 'vitest';
import { dnKey } from '../../../../lib/directory/dn.ts';
import {
  adGroupsFilter,
  groupCountFilter,
  groupFromDn,
  groupOf,
  LOOKUP_BATCH,
  matchesGroup,
  openParentsFilter,
  sidFilter,
  uniqueGroups,
  walkUp,
  type DirectoryGroup,
  type ParentLookup,
} from '../../../../lib/directory/groups.ts';

const G = (name: string): DirectoryGroup => ({ dn: `cn=${name},ou=groups,dc=example,dc=test`, name });
const USER = 'uid=bob,ou=people,dc=example,dc=test';

/** A directory as a map from a member DN to the groups that list it, and a lookup that records its calls. */
function directory(edges: Record<string, string[]>) {
  const byKey = new Map(Object.entries(edges).map(([dn, groups]) => [dnKey(dn), groups.map(G)]));
  const calls: Array<{ members: readonly string[]; depth: number }> = [];
  const lookup: ParentLookup = async (members, depth) => {
    calls.push({ members, depth });
    return members.flatMap((m) => byKey.get(dnKey(m)) ?? []);
  };
  return { lookup, calls };
}

const names = (groups: readonly DirectoryGroup[]) => groups.map((g) => g.name).sort();

describe('walkUp', () => {
  it('finds direct and nested groups, one lookup per level', async () => {
    const d = directory({ [USER]: ['proxy-users', 'level1'], [G('level1').dn]: ['level2'] });
    const walk = await walkUp(USER, d.lookup);
    expect(names(walk.groups)).toEqual(['level1', 'level2', 'proxy-users']);
    expect(walk.truncated).toBe(false);
    expect(d.calls.map((c) => c.depth)).toEqual([1, 2, 3]);
    expect(d.calls[1]?.members).toEqual([G('proxy-users').dn, G('level1').dn]);
  });

  it('ends on a cycle, visiting each group once', async () => {
    const d = directory({
      [USER]: ['cycle-a'],
      [G('cycle-a').dn]: ['cycle-b'],
      [G('cycle-b').dn]: ['cycle-a'],
    });
    const walk = await walkUp(USER, d.lookup);
    expect(names(walk.groups)).toEqual(['cycle-a', 'cycle-b']);
    expect(walk.truncated).toBe(false);
    expect(d.calls).toHaveLength(3);
  });

  it('ends on a group that contains itself, and never lists the user as its own group', async () => {
    const d = directory({
      [USER]: ['self'],
      [G('self').dn]: ['self'],
    });
    const withUser = directory({ [USER]: ['g'], [G('g').dn]: ['g'] });
    expect(names((await walkUp(USER, d.lookup)).groups)).toEqual(['self']);
    expect(names((await walkUp(USER, withUser.lookup)).groups)).toEqual(['g']);
  });

  it('compares DNs as DNs: differently written DNs of one group are one group', async () => {
    const lookup: ParentLookup = async (_members, depth) =>
      depth === 1
        ? [
            { dn: 'cn=Staff,ou=groups,dc=example,dc=test', name: 'Staff' },
            { dn: 'CN=staff, OU=Groups, DC=example, DC=test', name: 'staff' },
          ]
        : [];
    expect((await walkUp(USER, lookup)).groups).toHaveLength(1);
  });

  it('stops at the depth limit and says so', async () => {
    const chain: Record<string, string[]> = { [USER]: ['g1'] };
    for (let i = 1; i < 20; i++) chain[G(`g${i}`).dn] = [`g${i + 1}`];
    const d = directory(chain);
    const walk = await walkUp(USER, d.lookup, 8);
    expect(walk.groups).toHaveLength(8);
    expect(walk.truncated).toBe(true);
    expect(d.calls).toHaveLength(8);
  });

  it('is not truncated when the last level allowed finds nothing new', async () => {
    const d = directory({ [USER]: ['g1'], [G('g1').dn]: ['g2'] });
    const walk = await walkUp(USER, d.lookup, 3);
    expect(walk).toMatchObject({ truncated: false });
    expect(walk.groups).toHaveLength(2);
  });

  it('batches a wide level into lookups of at most LOOKUP_BATCH members', async () => {
    const many = Array.from({ length: 120 }, (_, i) => `g${i}`);
    const d = directory({ [USER]: many });
    const walk = await walkUp(USER, d.lookup);
    expect(walk.groups).toHaveLength(120);
    const level2 = d.calls.filter((c) => c.depth === 2);
    expect(level2.map((c) => c.members.length)).toEqual([LOOKUP_BATCH, LOOKUP_BATCH, 20]);
  });

  it('a user in no group has none, after one lookup', async () => {
    const d = directory({});
    expect(await walkUp(USER, d.lookup)).toEqual({ groups: [], truncated: false });
    expect(d.calls).toHaveLength(1);
  });

  it('passes a lookup failure on', async () => {
    await expect(walkUp(USER, async () => Promise.reject(new Error('down')))).rejects.toThrow('down');
  });
});

describe('matchesGroup', () => {
  const groups = [
    G('Staff Users'),
    G('proxy-users'),
    { dn: 'cn=Ünïcødé Group,ou=groups,dc=example,dc=test', name: 'Ünïcødé Group' },
    { dn: 'CN=Domain Users,CN=Users,DC=example,DC=test', name: 'Domain Users' },
  ];

  it('matches the cn case-insensitively, with spaces', () => {
    expect(matchesGroup(groups, 'Staff Users')).toBe(true);
    expect(matchesGroup(groups, 'staff users')).toBe(true);
    expect(matchesGroup(groups, 'STAFF USERS')).toBe(true);
    expect(matchesGroup(groups, ' Staff Users ')).toBe(true);
    expect(matchesGroup(groups, 'domain users')).toBe(true);
  });

  it('matches non-ASCII names, composed or decomposed, in any case', () => {
    expect(matchesGroup(groups, 'Ünïcødé Group')).toBe(true);
    expect(matchesGroup(groups, 'ÜNÏCØDÉ GROUP')).toBe(true);
    const decomposed = 'Ünïcødé Group'.normalize('NFD');
    expect(decomposed).not.toBe('Ünïcødé Group');
    expect(matchesGroup(groups, decomposed)).toBe(true);
  });

  it('matches a full DN, written any way', () => {
    expect(matchesGroup(groups, 'cn=Staff Users,ou=groups,dc=example,dc=test')).toBe(true);
    expect(matchesGroup(groups, 'CN=staff users, OU=Groups, DC=Example, DC=Test')).toBe(true);
    expect(matchesGroup(groups, 'cn=Staff Users,ou=other,dc=example,dc=test')).toBe(false);
  });

  it('does not match parts, patterns or other groups', () => {
    for (const wanted of ['Staff', 'Users', 'staff*', '*', 'proxy', 'level2', '', '   ']) {
      expect(matchesGroup(groups, wanted)).toBe(false);
    }
    expect(matchesGroup([], 'Staff Users')).toBe(false);
  });
});

describe('filters', () => {
  it('counts AD groups, and the four kinds of open-directory groups', () => {
    expect(groupCountFilter('active-directory')).toBe('(objectClass=group)');
    expect(groupCountFilter('open-directory')).toBe(
      '(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames)(objectClass=posixGroup)(objectClass=apple-group))',
    );
  });

  it('AD: in-chain member match for the user and the primary group, DNs escaped', () => {
    const user = 'CN=Doe\\, John (IT),CN=Users,DC=example,DC=test';
    const primary = 'CN=Domain Users,CN=Users,DC=example,DC=test';
    expect(adGroupsFilter([user])).toBe(
      '(&(objectClass=group)(member:1.2.840.113556.1.4.1941:=CN=Doe\\5c, John \\28IT\\29,CN=Users,DC=example,DC=test))',
    );
    const parsed = FilterParser.parseString(adGroupsFilter([user, primary])) as AndFilter;
    const or = parsed.filters[1] as OrFilter;
    expect(or.filters.map((f) => (f as ExtensibleFilter).value)).toEqual([user, primary]);
  });

  it('AD: a SID filter', () => {
    expect(sidFilter('S-1-5-21-1-2-3-513')).toBe('(objectSid=S-1-5-21-1-2-3-513)');
  });

  it('open directory: member and uniqueMember for each DN, memberUid for the user', () => {
    const filter = openParentsFilter(['uid=a*,dc=x', 'cn=g,dc=x'], ')(uid=*');
    const parsed = FilterParser.parseString(filter) as AndFilter;
    const or = parsed.filters[1] as OrFilter;
    expect(or.filters.map((f) => [(f as EqualityFilter).attribute, (f as EqualityFilter).value])).toEqual([
      ['member', 'uid=a*,dc=x'],
      ['uniqueMember', 'uid=a*,dc=x'],
      ['member', 'cn=g,dc=x'],
      ['uniqueMember', 'cn=g,dc=x'],
      ['memberUid', ')(uid=*'],
    ]);
  });
});

describe('groupOf, groupFromDn, uniqueGroups', () => {
  it('names a group by its cn, else by its first RDN', () => {
    expect(groupOf({ dn: 'cn=Staff Users,dc=x', cn: 'Staff Users' })).toEqual({
      dn: 'cn=Staff Users,dc=x',
      name: 'Staff Users',
    });
    expect(groupOf({ dn: 'cn=fallback,dc=x' }).name).toBe('fallback');
    expect(groupFromDn('CN=Level\\2C 2,DC=x')).toEqual({ dn: 'CN=Level\\2C 2,DC=x', name: 'Level, 2' });
  });

  it('drops repeats by DN, keeping the first', () => {
    expect(
      uniqueGroups([
        { dn: 'cn=a,dc=x', name: 'first' },
        { dn: 'CN=A, DC=X', name: 'second' },
        { dn: 'cn=b,dc=x', name: 'b' },
      ]),
    ).toEqual([
      { dn: 'cn=a,dc=x', name: 'first' },
      { dn: 'cn=b,dc=x', name: 'b' },
    ]);
  });
});
