import type { AndFilter, OrFilter } from 'ldapts';
import { EqualityFilter, FilterParser, type Entry } from 'ldapts';
import { describe, expect, it } from 'vitest';
import { parseLoginName } from '../../../../lib/directory/login-name.ts';
import { freshnessOf, pickUser, userSearch } from '../../../../lib/directory/users.ts';

const AD = 'active-directory' as const;
const OPEN = 'open-directory' as const;
const login = (name: string, kind: typeof AD | typeof OPEN) => parseLoginName(name, kind, 'example.test');

/** S-1-5-21-1-2-3-1104 in binary. */
const SID = Buffer.from([
  1, 5, 0, 0, 0, 0, 0, 5, 21, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0x50, 4, 0, 0,
]);

const adAlice: Entry = {
  dn: 'CN=Alice Anderson,CN=Users,DC=example,DC=test',
  sAMAccountName: 'Alice',
  userPrincipalName: 'alice@example.test',
  pwdLastSet: '134000000000000000',
  userAccountControl: '512',
  objectSid: SID,
  primaryGroupID: '513',
  memberOf: ['CN=Staff Users,CN=Users,DC=example,DC=test', 'CN=proxy-users,CN=Users,DC=example,DC=test'],
};

describe('userSearch', () => {
  it('AD short and DOMAIN\\user names: sAMAccountName among person objects', () => {
    for (const name of ['alice', 'EXAMPLE\\alice']) {
      expect(userSearch(login(name, AD), AD).filter).toBe(
        '(&(objectCategory=person)(objectClass=user)(sAMAccountName=alice))',
      );
    }
  });

  it('AD UPN in the base domain: the UPN, or the implicit UPN (sAMAccountName)', () => {
    expect(userSearch(login('alice@example.test', AD), AD).filter).toBe(
      '(&(objectCategory=person)(objectClass=user)(|(userPrincipalName=alice@example.test)(sAMAccountName=alice)))',
    );
    expect(userSearch(login('alice@elsewhere.test', AD), AD).filter).toBe(
      '(&(objectCategory=person)(objectClass=user)(userPrincipalName=alice@elsewhere.test))',
    );
  });

  it('AD: asks for the freshness attributes, SID (binary) and primary group', () => {
    const search = userSearch(login('alice', AD), AD);
    expect(search.attributes).toEqual(
      expect.arrayContaining([
        'sAMAccountName',
        'pwdLastSet',
        'userAccountControl',
        'objectSid',
        'primaryGroupID',
      ]),
    );
    expect(search.explicitBufferAttributes).toContain('objectSid');
  });

  it('open directory: uid, with the operational attributes asked for by name', () => {
    const search = userSearch(login('alice', OPEN), OPEN);
    expect(search.filter).toBe('(uid=alice)');
    expect(search.attributes).toEqual(
      expect.arrayContaining(['uid', 'entryCSN', 'modifyTimestamp', 'pwdChangedTime', 'memberOf']),
    );
  });

  it.each(['*', ')(uid=*', 'a*b', '(|(uid=*))'])('an injection attempt %j stays one uid value', (name) => {
    const parsed = FilterParser.parseString(userSearch(login(name, OPEN), OPEN).filter);
    expect(parsed).toBeInstanceOf(EqualityFilter);
    expect((parsed as EqualityFilter).value).toBe(name);
    const ad = FilterParser.parseString(userSearch(login(name, AD), AD).filter) as AndFilter;
    expect(ad.filters).toHaveLength(3);
    expect((ad.filters[2] as EqualityFilter).value).toBe(name);
  });

  it('a non-ASCII name goes into the filter as UTF-8 characters', () => {
    const parsed = FilterParser.parseString(userSearch(login('jürgen', OPEN), OPEN).filter) as EqualityFilter;
    expect(parsed.value).toBe('jürgen');
    const upn = FilterParser.parseString(
      userSearch(login('jürgen@example.test', AD), AD).filter,
    ) as AndFilter;
    expect(((upn.filters[2] as OrFilter).filters[0] as EqualityFilter).value).toBe('jürgen@example.test');
  });
});

describe('pickUser', () => {
  it('AD: the normalised name is the sAMAccountName lower-cased, whatever was typed', () => {
    for (const typed of ['alice', 'ALICE', 'alice@example.test', 'EXAMPLE\\Alice']) {
      const user = pickUser([adAlice], login(typed, AD), AD);
      expect(user).toMatchObject({
        dn: adAlice.dn,
        name: 'alice',
        shortName: 'Alice',
        disabled: false,
        sid: 'S-1-5-21-1-2-3-1104',
        primaryGroupId: 513,
      });
      expect(user?.memberOf).toHaveLength(2);
    }
  });

  it('AD: the freshness token holds pwdLastSet and userAccountControl', () => {
    const user = pickUser([adAlice], login('alice', AD), AD);
    expect(user?.freshness).toBe('pwdLastSet=134000000000000000;userAccountControl=512');
    const changed = pickUser([{ ...adAlice, pwdLastSet: '134000000000000001' }], login('alice', AD), AD);
    expect(changed?.freshness).not.toBe(user?.freshness);
    const disabled = pickUser([{ ...adAlice, userAccountControl: '514' }], login('alice', AD), AD);
    expect(disabled?.freshness).not.toBe(user?.freshness);
    expect(disabled?.disabled).toBe(true);
    const locked = pickUser([{ ...adAlice, lockoutTime: '134000000000000005' }], login('alice', AD), AD);
    expect(locked?.freshness).not.toBe(user?.freshness);
  });

  it('AD: of an exact UPN match and an implicit-UPN match, the exact one', () => {
    const other: Entry = {
      ...adAlice,
      dn: 'CN=Other,CN=Users,DC=example,DC=test',
      sAMAccountName: 'alice2',
      userPrincipalName: 'x@example.test',
    };
    const found = pickUser([other, adAlice], login('alice@example.test', AD), AD);
    expect(found?.dn).toBe(adAlice.dn);
  });

  it('nobody, or two accounts and no better match: undefined', () => {
    expect(pickUser([], login('alice', AD), AD)).toBeUndefined();
    expect(
      pickUser([adAlice, { ...adAlice, dn: 'CN=Alice2,DC=example,DC=test' }], login('alice', AD), AD),
    ).toBeUndefined();
    const uid: Entry = { dn: 'uid=alice,ou=a,dc=x', uid: 'alice', entryCSN: 'x' };
    expect(
      pickUser([uid, { ...uid, dn: 'uid=alice,ou=b,dc=x' }], login('alice', OPEN), OPEN),
    ).toBeUndefined();
  });

  it('open directory: the uid value asked for, lower-cased; freshness from entryCSN and modifyTimestamp', () => {
    const entry: Entry = {
      dn: 'uid=Alice,ou=people,dc=example,dc=test',
      uid: ['Alice', 'aa'],
      entryCSN: '20260101000000.000001Z#000000#000#000000',
      modifyTimestamp: '20260101000000Z',
      memberOf: 'cn=Staff Users,ou=groups,dc=example,dc=test',
    };
    expect(pickUser([entry], login('aa', OPEN), OPEN)).toMatchObject({ name: 'aa', shortName: 'aa' });
    const alice = pickUser([entry], login('ALICE', OPEN), OPEN);
    expect(alice).toMatchObject({
      name: 'alice',
      shortName: 'Alice',
      disabled: false,
      freshness: 'entryCSN=20260101000000.000001Z#000000#000#000000;modifyTimestamp=20260101000000Z',
      memberOf: ['cn=Staff Users,ou=groups,dc=example,dc=test'],
    });
  });

  it('open directory: no freshness attribute, no token (then nothing is cached)', () => {
    const user = pickUser([{ dn: 'uid=a,dc=x', uid: 'a' }], login('a', OPEN), OPEN);
    expect(user?.freshness).toBeUndefined();
  });

  it('an entry without its short name is no user', () => {
    expect(pickUser([{ dn: 'cn=x,dc=y' }], login('x', OPEN), OPEN)).toBeUndefined();
    expect(pickUser([{ dn: 'cn=x,dc=y' }], login('x', AD), AD)).toBeUndefined();
  });
});

describe('freshnessOf', () => {
  it('reads attribute names case-insensitively, in the order given', () => {
    expect(freshnessOf({ dn: 'x', pwdchangedtime: '2', ENTRYCSN: '1' }, ['entryCSN', 'pwdChangedTime'])).toBe(
      'entryCSN=1;pwdChangedTime=2',
    );
  });
});
