import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { findMac } from '../../../../lib/net/find-mac.ts';
import type { IpResult, IpRunner } from '../../../../lib/net/ip-runner.ts';
import { MacLookupCache } from '../../../../lib/net/mac-lookup-cache.ts';
import { NeighbourReader } from '../../../../lib/net/neighbour-reader.ts';
import {
  ARP_HEADER,
  ARP_TABLE,
  CLIENT_MAC,
  NEIGH_ALL,
  NEIGH_TO_IPV6,
  NEIGH_TO_NOTHING,
  ROUTE_ERR_NO_ROUTE,
  ROUTE_LOCAL,
  ROUTE_ON_LINK_IPV6,
  ROUTE_VIA_GATEWAY,
} from './neighbour-fixtures.ts';

const ok = (stdout: string): IpResult => ({ code: 0, stdout, stderr: '' });

/** A runner that answers from a table of argument lines, and records every call. */
function fakeIp(answers: Record<string, IpResult | Error>): IpRunner & { calls: string[] } {
  const calls: string[] = [];
  const run = (args: readonly string[]) => {
    const line = args.join(' ');
    calls.push(line);
    const answer = answers[line];
    if (answer === undefined) return Promise.reject(new Error(`unexpected: ip ${line}`));
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
  };
  return Object.assign(run, { calls });
}

/**
 * findMac's options over a fake `ip` and a fake /proc/net/arp (`arp`), read afresh for every lookup (no reuse
 * across a test's calls unless it says so).
 */
function over(run: IpRunner, arp: string | Error = ARP_HEADER) {
  const readArp = () => (arp instanceof Error ? Promise.reject(arp) : Promise.resolve(arp));
  return { run, neighbours: new NeighbourReader({ clock: new ManualClock(), run, readArp, ttlMs: 0 }) };
}

describe('findMac', () => {
  it('reads an IPv4 client’s MAC from /proc/net/arp, without starting a process', async () => {
    const run = fakeIp({});
    expect(await findMac('10.250.7.2', over(run, ARP_TABLE))).toEqual({
      ok: true,
      ip: '10.250.7.2',
      mac: CLIENT_MAC,
      locallyAdministered: true,
      source: 'neighbour-table',
      dev: 'nbc-h',
    });
    expect(run.calls).toEqual([]);
  });

  it('reads an IPv6 client’s MAC from one listing of the whole IPv6 table, without a shell or a prefix', async () => {
    const run = fakeIp({ '-json -6 neigh show': ok(NEIGH_ALL) });
    expect(await findMac('fd57::2', over(run))).toEqual({
      ok: true,
      ip: 'fd57::2',
      mac: CLIENT_MAC,
      locallyAdministered: true,
      source: 'neighbour-table',
      dev: 'nbc-h',
    });
    expect(run.calls).toEqual(['-json -6 neigh show']);
  });

  it('looks the normalised address up (IPv4-mapped, IPv6 spelling)', async () => {
    const run = fakeIp({ '-json -6 neigh show': ok(NEIGH_TO_IPV6) });
    expect(await findMac('::ffff:10.250.7.2', over(run, ARP_TABLE))).toMatchObject({
      ok: true,
      ip: '10.250.7.2',
    });
    expect(await findMac('FD57:0:0::2', over(run))).toMatchObject({
      ok: true,
      ip: 'fd57::2',
      mac: CLIENT_MAC,
    });
  });

  it('uses a real MAC Squid gave for an IPv4 client, without reading the table', async () => {
    const run = fakeIp({});
    const answer = findMac('10.250.7.2', {
      ...over(run, new Error('not read')),
      squidEui: '3c:22:fb:12:34:56',
    });
    expect(await answer).toEqual({
      ok: true,
      ip: '10.250.7.2',
      mac: '3c:22:fb:12:34:56',
      locallyAdministered: false,
      source: 'squid',
    });
    expect(run.calls).toEqual([]);
  });

  it.each(['-', '00:00:00:00:00:00'])(
    'reads the table when Squid gave %s for an IPv4 client',
    async (eui) => {
      expect(await findMac('10.250.7.2', { ...over(fakeIp({}), ARP_TABLE), squidEui: eui })).toMatchObject({
        ok: true,
        mac: CLIENT_MAC,
        source: 'neighbour-table',
      });
    },
  );

  it.each(['00-00-00-00-00-00-00-00', 'ac-bf-73-ff-fe-0d-2f-93', '3c:22:fb:12:34:56'])(
    'reads the table for an IPv6 client whatever Squid gave (%s)',
    async (eui) => {
      const run = fakeIp({ '-json -6 neigh show': ok(NEIGH_TO_IPV6) });
      expect(await findMac('fd57::2', { ...over(run), squidEui: eui })).toMatchObject({
        ok: true,
        mac: CLIENT_MAC,
        source: 'neighbour-table',
      });
      expect(run.calls).toEqual(['-json -6 neigh show']);
    },
  );

  it('answers invalid-address for something that is no address, without reading anything', async () => {
    const run = fakeIp({});
    for (const input of ['', '-n', '10.0.0.0/24', 'fe80::1%eth0', '10.0.0.5 ; reboot']) {
      expect(await findMac(input, over(run, new Error('not read')))).toMatchObject({
        ok: false,
        reason: 'invalid-address',
      });
    }
    expect(run.calls).toEqual([]);
  });

  it('asks the route when there is no entry: a routed client is not-on-link', async () => {
    const run = fakeIp({ '-json route get 203.0.113.5': ok(ROUTE_VIA_GATEWAY) });
    const answer = await findMac('203.0.113.5', { ...over(run, ARP_TABLE), squidEui: '00:00:00:00:00:00' });
    expect(answer).toMatchObject({ ok: false, reason: 'not-on-link' });
    expect(answer.ok ? '' : answer.message).toContain('reached through router 192.0.2.1 (on "eth0")');
    expect(run.calls).toEqual(['-json route get 203.0.113.5']);
  });

  it('an on-link address without an entry is no-entry', async () => {
    const run = fakeIp({
      '-json -6 neigh show': ok(NEIGH_TO_NOTHING),
      '-json route get fd57::99': ok(ROUTE_ON_LINK_IPV6),
    });
    expect(await findMac('fd57::99', over(run))).toMatchObject({ ok: false, reason: 'no-entry' });
  });

  it('this host’s own address is local', async () => {
    const run = fakeIp({ '-json route get 127.0.0.1': ok(ROUTE_LOCAL) });
    expect(await findMac('127.0.0.1', over(run))).toMatchObject({ ok: false, reason: 'local' });
  });

  it('a failing route get (no route) is not-on-link, with ip’s words', async () => {
    const run = fakeIp({
      '-json route get 198.51.100.5': { code: 2, stdout: '', stderr: ROUTE_ERR_NO_ROUTE },
    });
    expect(await findMac('198.51.100.5', over(run))).toEqual({
      ok: false,
      reason: 'not-on-link',
      message:
        '198.51.100.5 is not on any network this host is attached to (RTNETLINK answers: No route to host), so ' +
        'its MAC address cannot be known here',
    });
  });

  it('does not ask the route when there is an entry, usable or not', async () => {
    const run = fakeIp({ '-json -6 neigh show': ok(NEIGH_ALL) });
    expect(await findMac('fd57::99', over(run))).toMatchObject({ ok: false, reason: 'no-entry' });
    expect(await findMac('fd57::5', over(run))).toMatchObject({ ok: false, reason: 'no-mac' });
    expect(await findMac('10.250.7.9', over(run, ARP_TABLE))).toMatchObject({
      ok: false,
      reason: 'no-entry',
    });
    expect(run.calls).toEqual(['-json -6 neigh show', '-json -6 neigh show']);
  });

  it('answers lookup-failed, saying why, when ip fails, cannot run, or prints something unreadable', async () => {
    const cases: [IpResult | Error, string][] = [
      [new Error('ip -json -6 neigh show: timed out after 2000 ms'), 'timed out after 2000 ms'],
      [
        { code: 1, stdout: '', stderr: 'Error: any valid prefix is expected\nmore\n' },
        'exited with 1: Error: any valid prefix is expected',
      ],
      [{ code: 255, stdout: '', stderr: '' }, 'ip neigh show exited with 255'],
      [ok('fd57::2 dev lan0 lladdr 16:b8:30:8a:3a:08 REACHABLE'), 'is not JSON'],
    ];
    for (const [answer, why] of cases) {
      const result = await findMac('fd57::2', over(fakeIp({ '-json -6 neigh show': answer })));
      expect(result).toMatchObject({ ok: false, reason: 'lookup-failed' });
      expect(result.ok ? '' : result.message).toMatch(/^could not read the kernel's neighbour table: /);
      expect(result.ok ? '' : result.message).toContain(why);
    }
  });

  it('answers lookup-failed, saying why, when /proc/net/arp cannot be read or is not what it should be', async () => {
    const cases: [string | Error, string][] = [
      [new Error("ENOENT: no such file or directory, open '/proc/net/arp'"), 'ENOENT'],
      ['garbage\n', 'does not start with its "IP address" header line'],
      [ARP_HEADER + 'x'.repeat(1024 * 1024), 'over the 1048576 cap'],
    ];
    for (const [arp, why] of cases) {
      const result = await findMac('10.250.7.2', over(fakeIp({}), arp));
      expect(result).toMatchObject({ ok: false, reason: 'lookup-failed' });
      expect(result.ok ? '' : result.message).toContain(why);
    }
  });

  it('answers lookup-failed when the route cannot be read', async () => {
    const run = fakeIp({ '-json route get 10.0.0.5': ok('garbage') });
    expect(await findMac('10.0.0.5', over(run))).toMatchObject({ ok: false, reason: 'lookup-failed' });
  });

  it('shows ip’s stderr with control characters made visible and bounded', async () => {
    const run = fakeIp({
      '-json -6 neigh show': { code: 1, stdout: '', stderr: `\u001b[31m${'e'.repeat(500)}` },
    });
    const answer = await findMac('fd57::2', over(run));
    const message = answer.ok ? '' : answer.message;
    expect(message).not.toContain('\u001b');
    expect(message).toContain('\\u001b[31m');
    expect(message.length).toBeLessThan(300);
  });

  it('a runner that throws instead of rejecting is a lookup failure, not a rejection', async () => {
    const run: IpRunner = () => {
      throw new Error('spawn EAGAIN');
    };
    expect(await findMac('fd57::2', over(run))).toEqual({
      ok: false,
      reason: 'lookup-failed',
      message: "could not read the kernel's neighbour table: spawn EAGAIN",
    });
  });
});

describe('findMac with a cache', () => {
  it('shares one lookup between concurrent callers and reuses it until it expires', async () => {
    const clock = new ManualClock();
    const cache = new MacLookupCache({ clock, ttlMs: 2000 });
    const run = fakeIp({ '-json -6 neigh show': ok(NEIGH_TO_IPV6) });
    const options = { ...over(run), cache };
    const [a, b] = await Promise.all([findMac('fd57::2', options), findMac('fd57::2', options)]);
    expect(a).toEqual(b);
    expect(run.calls).toHaveLength(1);
    clock.advance(1999);
    await findMac('fd57::2', options);
    expect(run.calls).toHaveLength(1);
    clock.advance(1);
    await findMac('fd57::2', options);
    expect(run.calls).toHaveLength(2);
  });

  it('remembers a miss (a routed client) but not a lookup failure', async () => {
    const clock = new ManualClock();
    const cache = new MacLookupCache({ clock });
    const routed = fakeIp({ '-json route get 203.0.113.5': ok(ROUTE_VIA_GATEWAY) });
    await findMac('203.0.113.5', { ...over(routed), cache });
    await findMac('203.0.113.5', { ...over(routed), cache });
    expect(routed.calls).toHaveLength(1); // the second lookup was remembered

    const failing = fakeIp({ '-json -6 neigh show': new Error('timed out') });
    await findMac('fd57::2', { ...over(failing), cache });
    await findMac('fd57::2', { ...over(failing), cache });
    expect(failing.calls).toHaveLength(2);
  });

  it('does not cache what Squid gave (no lookup was made)', async () => {
    const cache = new MacLookupCache({ clock: new ManualClock() });
    await findMac('10.250.7.2', { ...over(fakeIp({})), cache, squidEui: '3c:22:fb:12:34:56' });
    expect(cache.size).toBe(0);
  });
});

describe('findMac under a burst of distinct unidentified addresses (issue 13)', () => {
  // 200 addresses of one /64, as a client drawing a fresh IPv6 address per request would use, and 200 IPv4
  // neighbours: every one is in the table, every lookup is new to the per-address cache.
  const v6 = Array.from({ length: 200 }, (_, i) => `fd57::${(i + 0x100).toString(16)}`);
  const v4 = Array.from({ length: 200 }, (_, i) => `10.250.${i >> 8}.${(i & 0xff) + 1}`);
  const mac = (i: number) =>
    `16:b8:30:8a:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`;
  const table6 = JSON.stringify(
    v6.map((dst, i) => ({ dst, dev: 'lan0', lladdr: mac(i), state: ['REACHABLE'] })),
  );
  const arp = [
    'IP address       HW type     Flags       HW address            Mask     Device',
    ...v4.map((ip, i) => `${ip.padEnd(16)} 0x1         0x2         ${mac(i)}     *        lan0`),
  ].join('\n');

  /** Every `ip` the lookups start, whatever its arguments: the per-address command or the whole table's. */
  function countingIp(): IpRunner & { calls: string[] } {
    const calls: string[] = [];
    const run = (args: readonly string[]) => {
      calls.push(args.join(' '));
      const to = args.at(-1) ?? '';
      const index = v6.indexOf(to) >= 0 ? v6.indexOf(to) : v4.indexOf(to);
      const one =
        index < 0 ? '[]' : JSON.stringify([{ dst: to, dev: 'lan0', lladdr: mac(index), state: ['STALE'] }]);
      return Promise.resolve(ok(args.includes('to') ? one : table6));
    };
    return Object.assign(run, { calls });
  }

  it('starts one ip process for all of them (IPv6), none for IPv4, and finds every MAC', async () => {
    const run = countingIp();
    const clock = new ManualClock();
    const cache = new MacLookupCache({ clock });
    const neighbours = new NeighbourReader({ clock, run, readArp: () => Promise.resolve(arp) });
    const answers = await Promise.all([...v6, ...v4].map((ip) => findMac(ip, { run, cache, neighbours })));
    expect(answers.map((a) => (a.ok ? a.mac : a.reason))).toEqual([
      ...v6.map((_, i) => mac(i)),
      ...v4.map((_, i) => mac(i)),
    ]);
    expect(run.calls).toEqual(['-json -6 neigh show']);
  });
});
