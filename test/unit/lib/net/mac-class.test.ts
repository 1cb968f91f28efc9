import { describe, expect, it } from 'vitest';
import { classifyMac } from '../../../../lib/net/mac-class.ts';

describe('classifyMac', () => {
  it.each([
    ['a maker-assigned (universal) MAC', '3c:22:fb:12:34:56', false],
    ['the same, upper case and dash-separated (normalised)', '3C-22-FB-12-34-56', false],
    ['a randomised (locally administered) MAC: x2', '16:b8:30:8a:3a:08', true],
    ['a randomised MAC: x6', 'a6:00:00:00:00:01', true],
    ['a randomised MAC: xa', 'da:a1:19:00:00:02', true],
    ['a randomised MAC: xe', 'ae:bf:73:0d:2f:93', true],
    ['universal with every other bit set', 'fc:ff:ff:ff:ff:ff', false],
  ])('%s is unicast', (_what, input, locallyAdministered) => {
    expect(classifyMac(input)).toEqual({
      kind: 'unicast',
      mac: input.toLowerCase().replaceAll('-', ':'),
      locallyAdministered,
    });
  });

  it("all zeros is 'none' (Squid's %>eui for a routed client), in either spelling", () => {
    expect(classifyMac('00:00:00:00:00:00')).toEqual({ kind: 'none' });
    expect(classifyMac('00-00-00-00-00-00')).toEqual({ kind: 'none' });
  });

  it('the I/G bit makes a group address: multicast, or broadcast when every bit is set', () => {
    expect(classifyMac('ff:ff:ff:ff:ff:ff')).toEqual({ kind: 'broadcast' });
    expect(classifyMac('FF-FF-FF-FF-FF-FF')).toEqual({ kind: 'broadcast' });
    expect(classifyMac('33:33:00:00:00:16')).toEqual({ kind: 'multicast' }); // IPv6 multicast
    expect(classifyMac('01:00:5e:00:00:01')).toEqual({ kind: 'multicast' }); // IPv4 multicast
    expect(classifyMac('03:00:00:00:00:00')).toEqual({ kind: 'multicast' }); // I/G and U/L both set
  });

  it.each([
    ['Squid’s “no value”', '-'],
    ['an empty string', ''],
    ['Squid’s IPv6 EUI-64 of a static address', '00-00-00-00-00-00-00-00'],
    ['Squid’s IPv6 EUI-64 of a SLAAC address', 'ac-bf-73-ff-fe-0d-2f-93'],
    ['mixed separators', '3c:22-fb:12:34:56'],
    ['five octets', '3c:22:fb:12:34'],
    ['a dotted Cisco spelling', '3c22.fb12.3456'],
    ['an IPv4 address (a GRE tunnel’s lladdr)', '10.250.7.1'],
    ['a 20-byte InfiniBand address', '80:00:00:48:fe:80:00:00:00:00:00:00:00:02:c9:03:00:0a:bc:01'],
    ['trailing newline', '3c:22:fb:12:34:56\n'],
  ])('%s is invalid', (_what, input) => {
    expect(classifyMac(input)).toEqual({ kind: 'invalid' });
  });
});
