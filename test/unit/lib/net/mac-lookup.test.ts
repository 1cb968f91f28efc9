import { describe, expect, it } from 'vitest';
import {
  fromNeighbours,
  fromRoute,
  fromSquidEui,
  invalidAddress,
  lookupFailed,
} from '../../../../lib/net/mac-lookup.ts';
import type { NeighbourEntry } from '../../../../lib/net/neighbour-table.ts';

const MAC = '16:b8:30:8a:3a:08';
const entry = (fields: Partial<NeighbourEntry>): NeighbourEntry => ({
  ip: '10.0.0.5',
  mac: MAC,
  lladdr: MAC,
  state: 'REACHABLE',
  dev: 'lan0',
  router: false,
  ...fields,
});

describe('fromSquidEui', () => {
  it('takes a real MAC Squid gave for an IPv4 client, normalised', () => {
    expect(fromSquidEui('10.0.0.5', '3C:22:FB:12:34:56')).toEqual({
      ok: true,
      ip: '10.0.0.5',
      mac: '3c:22:fb:12:34:56',
      locallyAdministered: false,
      source: 'squid',
    });
    expect(fromSquidEui('10.0.0.5', MAC)).toMatchObject({ mac: MAC, locallyAdministered: true });
  });

  it.each([
    ['no value', undefined],
    ['Squid’s "-"', '-'],
    ['all zeros (a routed client)', '00:00:00:00:00:00'],
    ['broadcast', 'ff:ff:ff:ff:ff:ff'],
    ['multicast', '01:00:5e:00:00:01'],
    ['an EUI-64', '00-00-00-00-00-00-00-00'],
    ['garbage', 'x'.repeat(1000)],
  ])('leaves an IPv4 client to the neighbour table when Squid gave %s', (_what, eui) => {
    expect(fromSquidEui('10.0.0.5', eui)).toBeUndefined();
  });

  it.each([
    ['a MAC-looking value', MAC],
    ['the zero EUI-64 of a static address', '00-00-00-00-00-00-00-00'],
    ['the EUI-64 of a SLAAC address', 'ac-bf-73-ff-fe-0d-2f-93'],
  ])('always leaves an IPv6 client to the neighbour table, even with %s', (_what, eui) => {
    expect(fromSquidEui('fd91::2', eui)).toBeUndefined();
    expect(fromSquidEui('fe80::1', eui)).toBeUndefined();
  });
});

describe('fromNeighbours', () => {
  it('gives the MAC of the entry for the address, with its device', () => {
    expect(
      fromNeighbours('10.0.0.5', [entry({ ip: '10.0.0.9', mac: '3c:22:fb:00:00:09' }), entry({})]),
    ).toEqual({
      ok: true,
      ip: '10.0.0.5',
      mac: MAC,
      locallyAdministered: true,
      source: 'neighbour-table',
      dev: 'lan0',
    });
  });

  it('leaves dev out when the entry has none', () => {
    const answer = fromNeighbours('10.0.0.5', [entry({ dev: undefined, mac: '3c:22:fb:12:34:56' })]);
    expect(answer).toEqual({
      ok: true,
      ip: '10.0.0.5',
      mac: '3c:22:fb:12:34:56',
      locallyAdministered: false,
      source: 'neighbour-table',
    });
  });

  it('is undefined when no entry is for the address (the route must tell why)', () => {
    expect(fromNeighbours('10.0.0.5', [])).toBeUndefined();
    expect(fromNeighbours('10.0.0.5', [entry({ ip: '10.0.0.6' })])).toBeUndefined();
  });

  it('takes the usable entry when another for the address is not (FAILED on another link)', () => {
    const answer = fromNeighbours('10.0.0.5', [
      entry({ dev: 'vlan20', state: 'FAILED', mac: undefined, lladdr: undefined }),
      entry({ dev: 'vlan10' }),
    ]);
    expect(answer).toMatchObject({ ok: true, mac: MAC, dev: 'vlan10' });
  });

  it('takes the same MAC seen on two links', () => {
    expect(fromNeighbours('10.0.0.5', [entry({ dev: 'a' }), entry({ dev: 'b' })])).toMatchObject({
      ok: true,
      mac: MAC,
      dev: 'a',
    });
  });

  it('refuses to choose between two different MACs, naming both', () => {
    expect(
      fromNeighbours('10.0.0.5', [
        entry({ dev: 'vlan10' }),
        entry({ dev: 'vlan20', mac: '3c:22:fb:12:34:56' }),
      ]),
    ).toEqual({
      ok: false,
      reason: 'ambiguous',
      message:
        '10.0.0.5 is in the neighbour table with 2 different MAC addresses (16:b8:30:8a:3a:08 (on "vlan10"), ' +
        '3c:22:fb:12:34:56 (on "vlan20")): more than one device answers for it on the links of this host, so ' +
        'which one is the client cannot be told',
    });
  });

  it.each([
    ['FAILED', 'FAILED'],
    ['INCOMPLETE', 'INCOMPLETE'],
  ] as const)('answers no-entry for a %s entry, saying the device did not answer', (_what, state) => {
    expect(
      fromNeighbours('fd57::99', [entry({ ip: 'fd57::99', state, mac: undefined, lladdr: undefined })]),
    ).toEqual({
      ok: false,
      reason: 'no-entry',
      message:
        `fd57::99 (on "lan0") is on this host's network, but the kernel has not resolved its MAC address ` +
        `(neighbour state ${state}): the device did not answer this host's ARP or neighbour solicitation; it ` +
        'may have left the network or be switched off',
    });
  });

  it.each([
    ['all zeros', '00:00:00:00:00:00', 'the all-zero MAC address 00:00:00:00:00:00', 'which names no device'],
    [
      'multicast',
      '33:33:00:00:00:16',
      'the multicast address 33:33:00:00:00:16',
      'which no device sends from',
    ],
    [
      'broadcast',
      'ff:ff:ff:ff:ff:ff',
      'the broadcast address ff:ff:ff:ff:ff:ff',
      'which no device sends from',
    ],
  ])('answers no-mac for a resolved entry whose MAC is %s', (_what, mac, what, why) => {
    expect(fromNeighbours('10.0.0.5', [entry({ mac, lladdr: mac })])).toEqual({
      ok: false,
      reason: 'no-mac',
      message: `10.0.0.5 (on "lan0") has ${what} in the neighbour table, ${why}`,
    });
  });

  it('answers no-mac for a link-layer address that is not an Ethernet MAC, or none (NOARP links)', () => {
    expect(
      fromNeighbours('10.0.0.5', [entry({ mac: undefined, lladdr: '10.250.7.1', dev: 'gre1' })]),
    ).toEqual({
      ok: false,
      reason: 'no-mac',
      message:
        '10.0.0.5 (on "gre1") has link-layer address "10.250.7.1" in the neighbour table, which is not an ' +
        'Ethernet MAC address',
    });
    expect(
      fromNeighbours('10.0.0.5', [entry({ mac: undefined, lladdr: undefined, state: 'NOARP', dev: 'ppp0' })]),
    ).toEqual({
      ok: false,
      reason: 'no-mac',
      message:
        '10.0.0.5 (on "ppp0") has no link-layer address in the neighbour table (state NOARP): its link has no ' +
        'MAC addresses',
    });
  });

  it('prefers no-mac (a resolved entry) to no-entry (an unresolved one) when both are there', () => {
    const answer = fromNeighbours('10.0.0.5', [
      entry({ state: 'FAILED', mac: undefined, lladdr: undefined }),
      entry({ mac: '00:00:00:00:00:00', lladdr: '00:00:00:00:00:00', dev: 'lan1' }),
    ]);
    expect(answer).toMatchObject({ ok: false, reason: 'no-mac' });
  });
});

describe('fromRoute', () => {
  it('says a routed client is not on this host’s network, naming the router', () => {
    expect(fromRoute('10.93.0.2', { kind: 'via-gateway', gateway: '10.94.0.2', dev: 'lan1' })).toEqual({
      ok: false,
      reason: 'not-on-link',
      message:
        "10.93.0.2 is not on this host's own network (subnet/VLAN): it is reached through router 10.94.0.2 " +
        '(on "lan1"), and its packets arrive with the router\'s MAC address, not its own, so its MAC address ' +
        'cannot be known here (only devices on a network this host is directly attached to can be)',
    });
  });

  it('says an address without a route is on no network of this host', () => {
    expect(
      fromRoute('198.51.100.5', { kind: 'no-route', detail: 'RTNETLINK answers: No route to host' }),
    ).toEqual({
      ok: false,
      reason: 'not-on-link',
      message:
        '198.51.100.5 is not on any network this host is attached to (RTNETLINK answers: No route to host), so ' +
        'its MAC address cannot be known here',
    });
  });

  it('says an on-link address without an entry has not talked to this host lately', () => {
    expect(fromRoute('fd57::9', { kind: 'on-link', dev: 'lan0' })).toEqual({
      ok: false,
      reason: 'no-entry',
      message:
        'fd57::9 is on this host\'s network (on "lan0"), but the kernel\'s neighbour table has no entry for ' +
        'it: the device has not exchanged packets with this host lately',
    });
  });

  it('says this host’s own address has no device MAC', () => {
    expect(fromRoute('127.0.0.1', { kind: 'local' })).toEqual({
      ok: false,
      reason: 'local',
      message:
        '127.0.0.1 is an address of this host itself, not of a device on its network, so there is no device MAC ' +
        'address to find',
    });
  });
});

describe('failure answers', () => {
  it('name the bad address, bounded', () => {
    expect(invalidAddress('10.0.0.256')).toEqual({
      ok: false,
      reason: 'invalid-address',
      message: 'client address "10.0.0.256" is not an IP address',
    });
    const long = invalidAddress('x'.repeat(500));
    expect(long.ok ? '' : long.message).toBe(`client address "${'x'.repeat(64)}…" is not an IP address`);
  });

  it('say the table could not be read, and why', () => {
    expect(lookupFailed('ip -json neigh show to 10.0.0.5: timed out after 2000 ms')).toEqual({
      ok: false,
      reason: 'lookup-failed',
      message:
        "could not read the kernel's neighbour table: ip -json neigh show to 10.0.0.5: timed out after 2000 ms",
    });
  });
});
