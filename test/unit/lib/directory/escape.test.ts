import { AndFilter, EqualityFilter, ExtensibleFilter, FilterParser } from 'ldapts';
import { describe, expect, it } from 'vitest';
import { escapeDnValue, escapeFilterValue, ldapFilter } from '../../../../lib/directory/escape.ts';
import { parseDn } from '../../../../lib/directory/dn.ts';

/** User names an attacker would try, and names that are merely awkward. */
const HOSTILE = [
  '*',
  ')(uid=*',
  '*)(|(uid=*',
  'alice)(objectClass=*',
  'alice\\',
  '\\',
  '\\2a',
  '\\00',
  '\x00',
  'alice\x00',
  '(',
  ')',
  '()',
  'a*b*c',
  'Jürgen',
  'Ünïcødé Group',
  '日本語',
  '😀',
  'Staff Users',
  'tab\there',
  'cn=x,dc=y',
  '',
];

describe('escapeFilterValue (RFC 4515)', () => {
  it('escapes the five characters the grammar forbids, as \\XX', () => {
    expect(escapeFilterValue('*')).toBe('\\2a');
    expect(escapeFilterValue('(')).toBe('\\28');
    expect(escapeFilterValue(')')).toBe('\\29');
    expect(escapeFilterValue('\\')).toBe('\\5c');
    expect(escapeFilterValue('\x00')).toBe('\\00');
    expect(escapeFilterValue(')(uid=*')).toBe('\\29\\28uid=\\2a');
    expect(escapeFilterValue('\\00')).toBe('\\5c00');
  });

  it('escapes other ASCII control characters too, so a logged filter stays on one line', () => {
    expect(escapeFilterValue('a\nb\tc\x7f')).toBe('a\\0ab\\09c\\7f');
  });

  it('leaves letters, spaces, = , and non-ASCII (UTF-8 is allowed as it is) alone', () => {
    expect(escapeFilterValue('Staff Users')).toBe('Staff Users');
    expect(escapeFilterValue('cn=x,dc=y')).toBe('cn=x,dc=y');
    expect(escapeFilterValue('Ünïcødé 日本 😀')).toBe('Ünïcødé 日本 😀');
  });

  it.each(HOSTILE)('ldapts reads %j back as exactly one equality assertion of that value', (value) => {
    const filter = FilterParser.parseString(ldapFilter`(uid=${value})`);
    expect(filter).toBeInstanceOf(EqualityFilter);
    expect((filter as EqualityFilter).attribute).toBe('uid');
    expect((filter as EqualityFilter).value).toBe(value);
  });

  it.each(HOSTILE)('%j cannot add a clause to an AND filter', (value) => {
    const filter = FilterParser.parseString(ldapFilter`(&(objectClass=person)(uid=${value}))`);
    expect(filter).toBeInstanceOf(AndFilter);
    const children = (filter as AndFilter).filters;
    expect(children).toHaveLength(2);
    expect((children[1] as EqualityFilter).value).toBe(value);
  });

  it('keeps a DN value intact in an extensible (in-chain) match', () => {
    const dn = 'CN=Doe\\, John (IT),CN=Users,DC=example,DC=test';
    const filter = FilterParser.parseString(ldapFilter`(member:1.2.840.113556.1.4.1941:=${dn})`);
    expect(filter).toBeInstanceOf(ExtensibleFilter);
    expect((filter as ExtensibleFilter).rule).toBe('1.2.840.113556.1.4.1941');
    expect((filter as ExtensibleFilter).matchType).toBe('member');
    expect((filter as ExtensibleFilter).value).toBe(dn);
  });
});

describe('ldapFilter', () => {
  it('escapes every value and none of the template', () => {
    expect(ldapFilter`(&(uid=${'*'})(cn=${'a(b)'}))`).toBe('(&(uid=\\2a)(cn=a\\28b\\29))');
    expect(ldapFilter`(objectClass=*)`).toBe('(objectClass=*)');
  });
});

describe('escapeDnValue (RFC 4514)', () => {
  it('escapes the special characters anywhere', () => {
    expect(escapeDnValue('Doe, John')).toBe('Doe\\, John');
    expect(escapeDnValue('a+b;c<d>e"f\\g=h')).toBe('a\\+b\\;c\\<d\\>e\\"f\\\\g\\=h');
    expect(escapeDnValue('nul\x00')).toBe('nul\\00');
  });

  it('escapes a leading space or #, and a trailing space', () => {
    expect(escapeDnValue(' lead')).toBe('\\ lead');
    expect(escapeDnValue('#hash')).toBe('\\#hash');
    expect(escapeDnValue('trail ')).toBe('trail\\ ');
    expect(escapeDnValue(' ')).toBe('\\ ');
    expect(escapeDnValue('  ')).toBe('\\ \\ ');
    expect(escapeDnValue('a#b c')).toBe('a#b c');
  });

  it('leaves non-ASCII alone', () => {
    expect(escapeDnValue('Ünïcødé Group')).toBe('Ünïcødé Group');
  });

  it.each([...HOSTILE, 'Doe, John', ' x ', '#x', 'a+b', 'trailing\\'])(
    'a DN built with it parses back to %j',
    (value) => {
      const rdns = parseDn(`cn=${escapeDnValue(value)},ou=groups,dc=example,dc=test`);
      expect(rdns?.[0]).toEqual([{ type: 'cn', value }]);
      expect(rdns).toHaveLength(4);
    },
  );
});
