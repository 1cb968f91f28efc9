import { describe, expect, it } from 'vitest';
import { parseProcArp } from '../../../../lib/net/proc-arp.ts';
import { ARP_HEADER, ARP_TABLE, CLIENT_MAC } from './neighbour-fixtures.ts';

describe('parseProcArp', () => {
  it('reads every entry: resolved, permanent, incomplete, on any link', () => {
    expect(parseProcArp(ARP_TABLE)).toEqual({
      ok: true,
      entries: [
        {
          ip: '10.250.7.2',
          mac: CLIENT_MAC,
          lladdr: CLIENT_MAC,
          state: 'REACHABLE',
          dev: 'nbc-h',
          router: false,
        },
        {
          ip: '10.250.7.3',
          mac: '02:00:5e:10:00:01',
          lladdr: '02:00:5e:10:00:01',
          state: 'PERMANENT',
          dev: 'nbc-h',
          router: false,
        },
        {
          ip: '10.250.7.9',
          mac: '00:00:00:00:00:00',
          lladdr: '00:00:00:00:00:00',
          state: 'INCOMPLETE',
          dev: 'nbc-h',
          router: false,
        },
        {
          ip: '192.0.2.1',
          mac: '02:fc:00:00:00:05',
          lladdr: '02:fc:00:00:00:05',
          state: 'REACHABLE',
          dev: 'eth0',
          router: false,
        },
      ],
    });
  });

  it('an empty table is the header alone', () => {
    expect(parseProcArp(ARP_HEADER)).toEqual({ ok: true, entries: [] });
    expect(parseProcArp(ARP_HEADER.trimEnd())).toEqual({ ok: true, entries: [] });
  });

  it('leaves out lines that are not entries (wrong column count, no address, bad flags)', () => {
    const text =
      ARP_HEADER +
      '10.250.7.2 0x1 0x2 16:b8:30:8a:3a:08 *\n' +
      'not-an-ip 0x1 0x2 16:b8:30:8a:3a:08 * lan0\n' +
      '10.250.7.4 0x1 2 16:b8:30:8a:3a:08 * lan0\n' +
      '10.250.7.5 0x20 0x2 80:00:02:08:fe:80:00:00:00:00:00:00:00:02:c9:03:00:0a:bb:cc * ib0\n';
    expect(parseProcArp(text)).toEqual({
      ok: true,
      entries: [
        {
          ip: '10.250.7.5',
          mac: undefined,
          lladdr: '80:00:02:08:fe:80:00:00:00:00:00:00:00:02:c9:03:00:0a:bb:cc',
          state: 'REACHABLE',
          dev: 'ib0',
          router: false,
        },
      ],
    });
  });

  it('refuses text without the header, or over the cap', () => {
    expect(parseProcArp('10.250.7.2 0x1 0x2 16:b8:30:8a:3a:08 * lan0\n')).toEqual({
      ok: false,
      reason: '/proc/net/arp does not start with its "IP address" header line',
    });
    expect(parseProcArp(ARP_TABLE, 100)).toEqual({
      ok: false,
      reason: `/proc/net/arp is ${ARP_TABLE.length} characters, over the 100 cap`,
    });
  });
});
