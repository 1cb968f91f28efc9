import { describe, expect, it } from 'vitest';
import {
  isResolved,
  MAX_NEIGHBOUR_OUTPUT,
  parseNeighbours,
  usableMac,
  type NeighbourEntry,
} from '../../../../lib/net/neighbour-table.ts';
import {
  CLIENT_MAC,
  NEIGH_ALL,
  NEIGH_DEV_INCOMPLETE,
  NEIGH_NUD_ALL,
  NEIGH_PROXY,
  NEIGH_STATS,
  NEIGH_TO_FAILED,
  NEIGH_TO_IPV4,
  NEIGH_TO_IPV6,
  NEIGH_TO_NOTHING,
  NEIGH_TO_ZERO,
} from './neighbour-fixtures.ts';

function entries(output: string): NeighbourEntry[] {
  const listing = parseNeighbours(output);
  if (!listing.ok) throw new Error(listing.reason);
  return listing.entries;
}

const entry = (fields: Partial<NeighbourEntry>): NeighbourEntry => ({
  ip: '10.0.0.5',
  mac: CLIENT_MAC,
  lladdr: CLIENT_MAC,
  state: 'REACHABLE',
  dev: 'lan0',
  router: false,
  ...fields,
});

describe('parseNeighbours on real ip -json output', () => {
  it('reads an IPv4 (ARP) entry from a `to` query', () => {
    expect(entries(NEIGH_TO_IPV4)).toEqual([
      { ip: '10.250.7.2', mac: CLIENT_MAC, lladdr: CLIENT_MAC, state: 'DELAY', dev: 'nbc-h', router: false },
    ]);
  });

  it('reads an IPv6 (NDP) entry', () => {
    expect(entries(NEIGH_TO_IPV6)).toEqual([
      { ip: 'fd57::2', mac: CLIENT_MAC, lladdr: CLIENT_MAC, state: 'STALE', dev: 'nbc-h', router: false },
    ]);
  });

  it('reads a FAILED entry, which has no lladdr', () => {
    expect(entries(NEIGH_TO_FAILED)).toEqual([
      { ip: 'fd57::99', mac: undefined, lladdr: undefined, state: 'FAILED', dev: 'nbc-h', router: false },
    ]);
  });

  it('reads an all-zero lladdr as it is (usableMac refuses it)', () => {
    const [zero] = entries(NEIGH_TO_ZERO);
    expect(zero).toMatchObject({ ip: 'fd57::5', mac: '00:00:00:00:00:00', state: 'STALE' });
  });

  it('reads an empty listing', () => {
    expect(entries(NEIGH_TO_NOTHING)).toEqual([]);
  });

  it('reads a whole table, both families and every link', () => {
    const all = entries(NEIGH_ALL);
    expect(all.map((e) => [e.ip, e.dev, e.state])).toEqual([
      ['10.214.2.2', 'dbgsh', 'STALE'],
      ['10.250.7.3', 'nbc-h', 'PERMANENT'],
      ['10.250.7.2', 'nbc-h', 'REACHABLE'],
      ['192.0.2.1', 'eth0', 'STALE'],
      ['fd00::1', 'eth0', 'FAILED'],
      ['fd57::2', 'nbc-h', 'REACHABLE'],
      ['fe80::14b8:30ff:fe8a:3a08', 'nbc-h', 'DELAY'],
      ['fd57::5', 'nbc-h', 'STALE'],
      ['fd57::99', 'nbc-h', 'FAILED'],
    ]);
  });

  it('leaves dev undefined when ip filtered on a device, and reads INCOMPLETE', () => {
    const listed = entries(NEIGH_DEV_INCOMPLETE);
    expect(listed.every((e) => e.dev === undefined)).toBe(true);
    expect(listed.at(-1)).toEqual({
      ip: 'fd57::99',
      mac: undefined,
      lladdr: undefined,
      state: 'INCOMPLETE',
      dev: undefined,
      router: false,
    });
  });

  it('reads NOARP entries and the router flag', () => {
    const listed = entries(NEIGH_NUD_ALL);
    expect(listed.find((e) => e.ip === 'fd57::6')).toEqual({
      ip: 'fd57::6',
      mac: '5e:11:22:33:44:55',
      lladdr: '5e:11:22:33:44:55',
      state: 'NOARP',
      dev: undefined,
      router: true,
    });
    expect(listed.find((e) => e.ip === 'ff02::16')).toMatchObject({
      mac: '33:33:00:00:00:16',
      state: 'NOARP',
    });
  });

  it('ignores the statistics keys of ip -s', () => {
    expect(entries(NEIGH_STATS).map((e) => [e.ip, e.mac, e.state])).toEqual([
      ['10.250.7.3', '02:00:5e:10:00:01', 'PERMANENT'],
      ['10.250.7.2', CLIENT_MAC, 'REACHABLE'],
      ['fd57::2', CLIENT_MAC, 'REACHABLE'],
      ['fe80::14b8:30ff:fe8a:3a08', CLIENT_MAC, 'DELAY'],
      ['fd57::5', '00:00:00:00:00:00', 'STALE'],
      ['fd57::99', undefined, 'FAILED'],
    ]);
  });

  it('reads a proxy entry (no lladdr, no state) as NONE', () => {
    expect(entries(NEIGH_PROXY)).toEqual([
      { ip: 'fd57::7', mac: undefined, lladdr: undefined, state: 'NONE', dev: 'nbc-h', router: false },
    ]);
  });
});

describe('parseNeighbours on edge cases', () => {
  it('normalises the address and the MAC', () => {
    const [e] = entries('[{"dst":"FD57:0:0:0:0:0:0:2","lladdr":"16:B8:30:8A:3A:08","state":["STALE"]}]');
    expect(e).toMatchObject({ ip: 'fd57::2', mac: CLIENT_MAC, lladdr: '16:B8:30:8A:3A:08' });
  });

  it('keeps a link-layer address that is not an EUI-48 as lladdr only (tunnels, InfiniBand)', () => {
    const listed = entries(
      '[{"dst":"10.251.0.2","dev":"gre1","lladdr":"10.250.7.1","state":["PERMANENT"]},' +
        '{"dst":"10.9.0.2","dev":"ib0","lladdr":"80:00:00:48:fe:80:00:00:00:00:00:00:00:02:c9:03:00:0a:bc:01","state":["REACHABLE"]}]',
    );
    expect(listed.map((e) => [e.mac, e.lladdr])).toEqual([
      [undefined, '10.250.7.1'],
      [undefined, '80:00:00:48:fe:80:00:00:00:00:00:00:00:02:c9:03:00:0a:bc:01'],
    ]);
  });

  it('FAILED or INCOMPLETE listed with another flag wins; unknown and hex flags are not states', () => {
    const state = (flags: string) => entries(`[{"dst":"10.0.0.5","state":${flags}}]`)[0]?.state;
    expect(state('["STALE","FAILED"]')).toBe('FAILED');
    expect(state('["REACHABLE","INCOMPLETE"]')).toBe('INCOMPLETE');
    expect(state('["NOARP","PERMANENT"]')).toBe('NOARP');
    expect(state('["0x100","PROBE"]')).toBe('PROBE');
    expect(state('["0x100"]')).toBe('NONE');
    expect(state('[]')).toBe('NONE');
    expect(state('"REACHABLE"')).toBe('NONE');
    expect(state('[1,"STALE"]')).toBe('STALE');
  });

  it('leaves out entries whose dst is missing or not an address; fields of the wrong type are absent', () => {
    const listed = entries(
      '[{"lladdr":"16:b8:30:8a:3a:08"},{"dst":"10.0.0.0/24"},{"dst":"fe80::1%eth0"},{"dst":5},' +
        '{"dst":"10.0.0.6","dev":7,"lladdr":["16:b8:30:8a:3a:08"],"state":["REACHABLE"]}]',
    );
    expect(listed).toEqual([
      {
        ip: '10.0.0.6',
        mac: undefined,
        lladdr: undefined,
        state: 'REACHABLE',
        dev: undefined,
        router: false,
      },
    ]);
  });

  it.each([
    ['empty output', '', 'not JSON'],
    ['the text listing (no -json)', '10.0.0.5 dev lan0 lladdr 16:b8:30:8a:3a:08 REACHABLE\n', 'not JSON'],
    ['cut-off JSON', NEIGH_ALL.slice(0, 100), 'not JSON'],
    ['an object', '{"dst":"10.0.0.5"}', 'not a JSON array'],
    ['null', 'null', 'not a JSON array'],
    ['an array of strings', '["10.0.0.5"]', 'element that is not an object'],
    ['an array holding null', '[null]', 'element that is not an object'],
    ['an array holding an array', '[[]]', 'element that is not an object'],
  ])('refuses %s', (_what, output, reason) => {
    const listing = parseNeighbours(output);
    expect(listing.ok).toBe(false);
    expect(listing.ok ? '' : listing.reason).toContain(reason);
  });

  it('refuses output over the cap, naming its length and the cap, and takes output at the cap', () => {
    const padded = (n: number) => `[${' '.repeat(n - 2)}]`;
    expect(parseNeighbours(padded(MAX_NEIGHBOUR_OUTPUT))).toEqual({ ok: true, entries: [] });
    expect(parseNeighbours(padded(MAX_NEIGHBOUR_OUTPUT + 1))).toEqual({
      ok: false,
      reason: `neighbour listing is ${MAX_NEIGHBOUR_OUTPUT + 1} characters, over the ${MAX_NEIGHBOUR_OUTPUT} cap`,
    });
    expect(parseNeighbours(NEIGH_TO_IPV4, 10)).toMatchObject({ ok: false });
  });
});

describe('usableMac', () => {
  it.each(['REACHABLE', 'STALE', 'DELAY', 'PROBE', 'PERMANENT', 'NOARP'] as const)(
    'gives the MAC of a %s entry',
    (state) => {
      expect(isResolved(entry({ state }))).toBe(true);
      expect(usableMac(entry({ state }))).toEqual({ mac: CLIENT_MAC, locallyAdministered: true });
    },
  );

  it.each(['INCOMPLETE', 'FAILED', 'NONE'] as const)(
    'gives nothing for a %s entry, even with a MAC',
    (state) => {
      expect(isResolved(entry({ state }))).toBe(false);
      expect(usableMac(entry({ state }))).toBeUndefined();
    },
  );

  it('says whether the MAC is locally administered', () => {
    expect(usableMac(entry({ mac: '3c:22:fb:12:34:56' }))).toEqual({
      mac: '3c:22:fb:12:34:56',
      locallyAdministered: false,
    });
  });

  it('gives nothing for no lladdr, a non-Ethernet one, all zeros, multicast or broadcast', () => {
    for (const mac of [undefined, '00:00:00:00:00:00', '33:33:00:00:00:16', 'ff:ff:ff:ff:ff:ff']) {
      expect(usableMac(entry({ mac }))).toBeUndefined();
    }
  });

  it('gives the MAC of the client in the captured listings', () => {
    const all = entries(NEIGH_ALL);
    expect(all.filter((e) => usableMac(e)?.mac === CLIENT_MAC).map((e) => e.ip)).toEqual([
      '10.250.7.2',
      'fd57::2',
      'fe80::14b8:30ff:fe8a:3a08',
    ]);
    expect(entries(NEIGH_NUD_ALL).flatMap((e) => usableMac(e)?.mac ?? [])).toEqual([
      '02:00:5e:10:00:01',
      CLIENT_MAC,
      '5e:11:22:33:44:55',
      CLIENT_MAC,
      CLIENT_MAC,
    ]);
  });
});
