import { describe, expect, it } from 'vitest';
import { normaliseIp, normaliseMac } from '../../../../lib/net/address.ts';

describe('normaliseIp', () => {
  describe('IPv4', () => {
    it.each(['10.0.0.5', '0.0.0.0', '255.255.255.255', '192.168.1.100'])(
      'keeps dotted-quad %s as it is',
      (ip) => {
        expect(normaliseIp(ip)).toBe(ip);
      },
    );

    it.each([
      ['leading zero', '010.0.0.5'],
      ['leading zeros in the last octet', '10.0.0.05'],
      ['octet above 255', '256.1.1.1'],
      ['three octets', '1.2.3'],
      ['five octets', '1.2.3.4.5'],
      ['trailing dot', '10.0.0.5.'],
      ['leading space', ' 10.0.0.5'],
      ['trailing space', '10.0.0.5 '],
      ['trailing newline', '10.0.0.5\n'],
      ['hex octet', '0x0a.0.0.5'],
      ['single integer', '167772165'],
      ['CIDR suffix', '10.0.0.0/8'],
      ['port suffix', '10.0.0.5:3128'],
    ])('rejects %s (%j)', (_what, input) => {
      expect(normaliseIp(input)).toBeUndefined();
    });
  });

  describe('IPv4-mapped IPv6', () => {
    it.each([
      ['::ffff:10.0.0.5', '10.0.0.5'],
      ['::FFFF:10.0.0.5', '10.0.0.5'],
      ['::ffff:0a00:0005', '10.0.0.5'],
      ['::ffff:a00:5', '10.0.0.5'],
      ['0:0:0:0:0:ffff:a00:5', '10.0.0.5'],
      ['0000:0000:0000:0000:0000:ffff:255.255.255.255', '255.255.255.255'],
      ['::ffff:0:0', '0.0.0.0'],
      ['::ffff:c0a8:0164', '192.168.1.100'],
    ])('%s is the IPv4 address %s', (input, expected) => {
      expect(normaliseIp(input)).toBe(expected);
    });

    it('does not treat other prefixes with an IPv4 tail as mapped', () => {
      // ::a.b.c.d (deprecated IPv4-compatible) and ::ffff:0:a.b.c.d (IPv4-translated) are not the IPv4 client.
      expect(normaliseIp('::10.0.0.5')).toBe('::a00:5');
      expect(normaliseIp('::ffff:0:10.0.0.5')).toBe('::ffff:0:a00:5');
      expect(normaliseIp('1::ffff:10.0.0.5')).toBe('1::ffff:a00:5');
    });

    it('rejects a mapped address whose IPv4 part has a leading zero', () => {
      expect(normaliseIp('::ffff:010.0.0.5')).toBeUndefined();
    });
  });

  describe('IPv6 in RFC 5952 form', () => {
    it.each([
      ['lower case (§4.3)', '2001:DB8:AAAA::1', '2001:db8:aaaa::1'],
      ['leading zeros dropped (§4.1)', '2001:0db8:0000:0000:0000:ff00:0042:8329', '2001:db8::ff00:42:8329'],
      ['longest zero run compressed (§4.2.3)', '2001:db8:0:0:1:0:0:0', '2001:db8:0:0:1::'],
      ['longest run wins even when later', '1:0:0:2:0:0:0:3', '1:0:0:2::3'],
      ['first run on a tie (§4.2.3)', '2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
      ['first run on a tie, re-compressed', '2001:db8:0:1:0:0:0:0', '2001:db8:0:1::'],
      ['tie of two-group runs', '1:0:0:2:0:0:3:4', '1::2:0:0:3:4'],
      ['a single zero group is not compressed (§4.2.2)', '2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
      [
        'a needlessly compressed single zero group is expanded',
        '2001:db8::1:1:1:1:1',
        '2001:db8:0:1:1:1:1:1',
      ],
      ['non-canonical compression moved to the longest run', '2001:db8::1:0:0:0:1', '2001:db8:0:1::1'],
      ['all zeros', '0:0:0:0:0:0:0:0', '::'],
      ['already ::', '::', '::'],
      ['loopback', '0:0:0:0:0:0:0:1', '::1'],
      ['loopback spelled ::1', '::1', '::1'],
      ['trailing run', '1:0:0:0:0:0:0:0', '1::'],
      ['two trailing zero groups', 'a:b:c:d:e:f:0:0', 'a:b:c:d:e:f::'],
      ['leading run of four beats trailing run of three', '0:0:0:0:1:0:0:0', '::1:0:0:0'],
      ['link-local', 'FE80:0000:0000:0000:0202:B3FF:FE1E:8329', 'fe80::202:b3ff:fe1e:8329'],
      ['no zero groups', '1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8'],
    ])('%s: %s → %s', (_rule, input, expected) => {
      expect(normaliseIp(input)).toBe(expected);
    });

    it('is idempotent on its own output', () => {
      for (const input of [
        '2001:DB8:0:0:1:0:0:1',
        '::ffff:0a00:0005',
        '1:0:0:0:0:0:0:0',
        '0:0:0:0:1:0:0:0',
      ]) {
        const once = normaliseIp(input);
        expect(once).toBeDefined();
        expect(normaliseIp(once as string)).toBe(once);
      }
    });

    it('accepts the longest textual form (45 characters)', () => {
      const longest = '0000:0000:0000:0000:0000:ffff:255.255.255.255';
      expect(longest).toHaveLength(45);
      expect(normaliseIp(longest)).toBe('255.255.255.255');
    });

    it.each([
      ['zone id', 'fe80::1%eth0'],
      ['numeric zone id', 'fe80::1%1'],
      ['two ::', '1::2::3'],
      ['nine groups', '1:2:3:4:5:6:7:8:9'],
      ['seven groups', '1:2:3:4:5:6:7'],
      ['five-digit group', '00000::1'],
      ['non-hex digit', 'g::1'],
      ['brackets', '[::1]'],
      ['bracketed with port', '[::1]:3128'],
      ['triple colon', ':::1'],
      ['single leading colon', ':1:2:3:4:5:6:7:8'],
      ['CIDR suffix', '2001:db8::/32'],
      ['surrounding space', ' ::1 '],
    ])('rejects %s (%j)', (_what, input) => {
      expect(normaliseIp(input)).toBeUndefined();
    });
  });

  describe('not an address', () => {
    it.each([
      ['empty', ''],
      ['word', 'localhost'],
      ['hostname', 'proxy.example.org'],
      ['garbage', 'not an address'],
      ['MAC', 'aa:bb:cc:dd:ee:ff'],
      ['46 characters', `${'1'.repeat(46)}`],
      ['very long', '1:'.repeat(5000)],
      ['long string of an address repeated', '10.0.0.5'.repeat(10)],
    ])('%s → undefined', (_what, input) => {
      expect(normaliseIp(input)).toBeUndefined();
    });
  });
});

describe('normaliseMac', () => {
  it.each([
    ['aa:bb:cc:dd:ee:ff', 'aa:bb:cc:dd:ee:ff'],
    ['AA:BB:CC:DD:EE:FF', 'aa:bb:cc:dd:ee:ff'],
    ['aa-bb-cc-dd-ee-ff', 'aa:bb:cc:dd:ee:ff'],
    ['00-1A-2b-3C-4d-5E', '00:1a:2b:3c:4d:5e'],
    ['00:00:00:00:00:00', '00:00:00:00:00:00'],
  ])('%s → %s', (input, expected) => {
    expect(normaliseMac(input)).toBe(expected);
  });

  it.each([
    ['mixed separators', 'aa:bb-cc:dd:ee:ff'],
    ['Cisco dotted form', 'aabb.ccdd.eeff'],
    ['no separators', 'aabbccddeeff'],
    ['five octets', 'aa:bb:cc:dd:ee'],
    ['seven octets', 'aa:bb:cc:dd:ee:ff:00'],
    ['single-digit octet', 'a:bb:cc:dd:ee:ff'],
    ['three-digit octet', 'aaa:bb:cc:dd:ee:ff'],
    ['non-hex digit', 'gg:bb:cc:dd:ee:ff'],
    ['trailing separator', 'aa:bb:cc:dd:ee:ff:'],
    ['trailing newline', 'aa:bb:cc:dd:ee:ff\n'],
    ['space separators', 'aa bb cc dd ee ff'],
    ['EUI-64', '00:11:22:ff:fe:33:44:55'],
    ["Squid's %>eui for a static IPv6 client", '00-00-00-00-00-00-00-00'],
    ["Squid's %>eui for a SLAAC IPv6 client", 'ac-bf-73-ff-fe-0d-2f-93'],
    ['empty', ''],
    ['IP address', '10.0.0.5'],
  ])('rejects %s (%j)', (_what, input) => {
    expect(normaliseMac(input)).toBeUndefined();
  });
});
