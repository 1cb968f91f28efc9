import { describe, expect, it } from 'vitest';
import { addressGroup } from '../../../../lib/net/address.ts';

describe('addressGroup', () => {
  it('is the address itself for IPv4, IPv4-mapped IPv6 included', () => {
    expect(addressGroup('192.0.2.7')).toBe('192.0.2.7');
    expect(addressGroup('::ffff:192.0.2.7')).toBe('192.0.2.7');
  });

  it('is the /64 for IPv6, whatever the spelling', () => {
    expect(addressGroup('2001:db8:1:2::a')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:DB8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(addressGroup('2001:db8:0:0:1::1')).toBe('2001:db8::/64');
    expect(addressGroup('::1')).toBe('::/64');
    expect(addressGroup('2001:db8:1:3::a')).not.toBe(addressGroup('2001:db8:1:2::a'));
  });

  it('returns what is not an address as it is', () => {
    expect(addressGroup('')).toBe('');
    expect(addressGroup('nonsense')).toBe('nonsense');
  });
});
