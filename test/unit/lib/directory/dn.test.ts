import { describe, expect, it } from 'vitest';
import { dnKey, dnsDomainOf, firstRdnValue, parseDn } from '../../../../lib/directory/dn.ts';

describe('parseDn', () => {
  it('splits RDNs and resolves escapes', () => {
    expect(parseDn('CN=Doe\\, John,OU=People,DC=example,DC=test')).toEqual([
      [{ type: 'CN', value: 'Doe, John' }],
      [{ type: 'OU', value: 'People' }],
      [{ type: 'DC', value: 'example' }],
      [{ type: 'DC', value: 'test' }],
    ]);
  });

  it('decodes \\XX hex pairs as UTF-8', () => {
    expect(parseDn('cn=\\C3\\9Cn\\C3\\AFc\\C3\\B8d\\C3\\A9 Group,dc=x')?.[0]).toEqual([
      { type: 'cn', value: 'Ünïcødé Group' },
    ]);
    expect(parseDn('cn=a\\2cb,dc=x')?.[0]).toEqual([{ type: 'cn', value: 'a,b' }]);
  });

  it('reads multi-valued RDNs, spaces around separators, and ; as a separator', () => {
    expect(parseDn('cn=a + uid=b , dc=x;dc=y')).toEqual([
      [
        { type: 'cn', value: 'a' },
        { type: 'uid', value: 'b' },
      ],
      [{ type: 'dc', value: 'x' }],
      [{ type: 'dc', value: 'y' }],
    ]);
  });

  it('keeps escaped trailing spaces and drops unescaped ones', () => {
    expect(parseDn('cn=a\\ ,dc=x')?.[0]).toEqual([{ type: 'cn', value: 'a ' }]);
    expect(parseDn('cn=a  ,dc=x')?.[0]).toEqual([{ type: 'cn', value: 'a' }]);
  });

  it('keeps a #hexstring value as written (lower-cased)', () => {
    expect(parseDn('1.3.6.1.4.1.1466.0=#04024869,dc=x')?.[0]).toEqual([
      { type: '1.3.6.1.4.1.1466.0', value: '#04024869' },
    ]);
  });

  it('reads the empty string as the root DN', () => {
    expect(parseDn('')).toEqual([]);
  });

  it.each(['alice', 'cn', '=x', 'cn=a,', 'cn=a,dc', '1bad=x', 'cn=\\', 'cn=\\ff\\fe'])(
    'is undefined for %j',
    (dn) => {
      expect(parseDn(dn)).toBeUndefined();
    },
  );
});

describe('dnKey', () => {
  it('is equal for DNs that differ only in case, spacing and escaping', () => {
    const forms = [
      'CN=Staff Users,OU=Groups,DC=Example,DC=Test',
      'cn=staff users, ou=groups, dc=example, dc=test',
      'cn=Staff\\20Users,ou=groups,dc=example,dc=test',
      'CN=STAFF USERS;OU=GROUPS;DC=EXAMPLE;DC=TEST',
    ];
    const keys = new Set(forms.map(dnKey));
    expect(keys.size).toBe(1);
  });

  it('is equal for composed and decomposed non-ASCII values', () => {
    expect(dnKey('cn=\u00dcber,dc=x')).toBe(dnKey('cn=U\u0308ber,dc=x'));
  });

  it('differs for different DNs, an escaped comma included', () => {
    expect(dnKey('cn=a\\,b,dc=x')).not.toBe(dnKey('cn=a,cn=b,dc=x'));
    expect(dnKey('cn=a,dc=x')).not.toBe(dnKey('cn=a,dc=y'));
  });

  it('orders the values of a multi-valued RDN', () => {
    expect(dnKey('uid=b+cn=a,dc=x')).toBe(dnKey('cn=a+uid=b,dc=x'));
  });

  it('falls back to trim and lower case for a string that is not a DN', () => {
    expect(dnKey('  Not A DN ')).toBe('not a dn');
  });
});

describe('firstRdnValue and dnsDomainOf', () => {
  it('firstRdnValue gives the most specific value', () => {
    expect(firstRdnValue('CN=Domain Users,CN=Users,DC=example,DC=test')).toBe('Domain Users');
    expect(firstRdnValue('not a dn')).toBeUndefined();
  });

  it('dnsDomainOf joins the domain components', () => {
    expect(dnsDomainOf('DC=Example,DC=Test')).toBe('example.test');
    expect(dnsDomainOf('ou=x,dc=corp,dc=example,dc=com')).toBe('corp.example.com');
    expect(dnsDomainOf('o=Example')).toBeUndefined();
  });
});
