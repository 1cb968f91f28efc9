import { describe, expect, it } from 'vitest';
import { unavailable } from '../../../../../lib/seamless/doctor/check-result.ts';
import { clockFromCurrentTime, parseNetAdsInfoOffset } from '../../../../../lib/seamless/doctor/clock.ts';
import { aRecordsAnswer, dnsFailure } from '../../../../../lib/seamless/doctor/dns.ts';
import {
  checkClock,
  checkDnsA,
  checkDnsPtr,
  checkPorts,
  reverseName,
  showDuration,
} from '../../../../../lib/seamless/doctor/network-checks.ts';
import { DC_PORTS, portProbe } from '../../../../../lib/seamless/doctor/ports.ts';
import { CURRENT_TIME, NET_ADS_INFO_SKEWED } from './fixtures.ts';
import { CONTEXT, GOOD, ptrAnswer } from './lab-setup.ts';

describe('dns-a', () => {
  it('passes when the FQDN resolves to an address of this host', () => {
    expect(checkDnsA(CONTEXT, GOOD.dns)).toEqual({
      id: 'dns-a',
      ok: true,
      status: 'ok',
      title: "The proxy's FQDN has an A record",
      detail: 'proxy.example.test has address 10.77.0.2',
    });
  });

  it('fails without an A record, naming the fix', () => {
    const result = checkDnsA(CONTEXT, { a: dnsFailure('ENOTFOUND'), localAddresses: ['10.77.0.2'] });
    expect([result.status, result.detail, result.fix]).toEqual([
      'fail',
      'proxy.example.test: no such name (NXDOMAIN) (ENOTFOUND)',
      "add an A record for proxy.example.test pointing to this host's address (10.77.0.2) in the DNS zone on the domain controller",
    ]);
  });

  it("fails when the A record is another host's address", () => {
    const result = checkDnsA(CONTEXT, { a: aRecordsAnswer(['10.77.0.9']), localAddresses: ['10.77.0.2'] });
    expect([result.status, result.detail, result.fix]).toEqual([
      'fail',
      "proxy.example.test has address 10.77.0.9, none of them this host's (10.77.0.2)",
      "correct the A record of proxy.example.test to this host's address",
    ]);
  });

  it('is skipped when the lookup could not run', () => {
    const result = checkDnsA(CONTEXT, {
      a: unavailable('no nameserver in /etc/resolv.conf'),
      localAddresses: [],
    });
    expect([result.status, result.ok, result.detail]).toEqual([
      'skipped',
      false,
      'the A record could not be looked up: no nameserver in /etc/resolv.conf',
    ]);
  });
});

describe('dns-ptr', () => {
  it('passes when the address points back to the FQDN', () => {
    expect(checkDnsPtr(CONTEXT, GOOD.dns)).toMatchObject({
      status: 'ok',
      detail: '10.77.0.2 points to proxy.example.test',
    });
  });

  it('fails on a deleted PTR (the lab: NXDOMAIN), naming the record to add', () => {
    const result = checkDnsPtr(CONTEXT, { ptr: [{ address: '10.77.0.2', answer: dnsFailure('ENOTFOUND') }] });
    expect([result.status, result.detail, result.fix]).toEqual([
      'fail',
      '10.77.0.2 (2.0.77.10.in-addr.arpa): no such name (NXDOMAIN) (ENOTFOUND)',
      'in the reverse zone on the domain controller: add the PTR record 2.0.77.10.in-addr.arpa → proxy.example.test.',
    ]);
  });

  it('fails on a PTR to another name (the lab: other.example.test.), naming both', () => {
    const result = checkDnsPtr(CONTEXT, { ptr: ptrAnswer(['other.example.test.']) });
    expect([result.status, result.detail, result.fix]).toEqual([
      'fail',
      '10.77.0.2 points to other.example.test, not proxy.example.test',
      'in the reverse zone on the domain controller: change the PTR record 2.0.77.10.in-addr.arpa from other.example.test to proxy.example.test.',
    ]);
    // One of several names matching is enough.
    expect(
      checkDnsPtr(CONTEXT, { ptr: ptrAnswer(['other.example.test.', 'proxy.example.test.']) }).status,
    ).toBe('ok');
  });

  it('is skipped without an address to look up', () => {
    expect(checkDnsPtr(CONTEXT, { ptr: [] })).toMatchObject({
      status: 'skipped',
      fix: 'fix the A record first',
    });
  });

  it('reverseName', () => {
    expect(reverseName('10.77.0.2')).toBe('2.0.77.10.in-addr.arpa');
  });
});

describe('clock', () => {
  it('passes within 5 minutes, saying by how much', () => {
    expect(checkClock(CONTEXT, GOOD.clock)).toMatchObject({
      status: 'ok',
      detail: "this host's clock is the same as the domain controller (net ads info, offset 0 s)",
    });
    expect(checkClock(CONTEXT, { offsetSeconds: 300, source: 'net ads info' }).status).toBe('ok');
    expect(checkClock(CONTEXT, { offsetSeconds: -300, source: 'net ads info' }).status).toBe('ok');
  });

  it('fails on the lab skew (local clock 10 minutes fast), saying which way', () => {
    const result = checkClock(CONTEXT, parseNetAdsInfoOffset(NET_ADS_INFO_SKEWED));
    expect([result.status, result.detail, result.fix]).toEqual([
      'fail',
      "this host's clock is 10 min ahead of (fast) the domain controller (net ads info, offset -600 s); Kerberos refuses tickets beyond 5 min",
      "set this host's clock right and keep it so: point its NTP client (chrony, systemd-timesyncd) at the same time source as the domain controller 10.77.0.1 (a Samba DC serves no NTP itself)",
    ]);
  });

  it('fails one second past the limit, slow as well as fast', () => {
    const dc = Date.parse('2026-11-22T21:33:45Z');
    const slow = checkClock(CONTEXT, clockFromCurrentTime(CURRENT_TIME, dc - 301_000));
    expect([slow.status, slow.detail]).toEqual([
      'fail',
      "this host's clock is 5 min 1 s behind (slow) the domain controller (rootDSE currentTime, offset 301 s); Kerberos refuses tickets beyond 5 min",
    ]);
    expect(checkClock(CONTEXT, { offsetSeconds: -301, source: 'net ads info' }).status).toBe('fail');
  });

  it('showDuration', () => {
    expect([
      showDuration(0),
      showDuration(-59),
      showDuration(630),
      showDuration(3600),
      showDuration(3661),
    ]).toEqual(['0 s', '59 s', '10 min 30 s', '1 h', '1 h 1 min 1 s']);
  });
});

describe('ports', () => {
  it('passes when all four accept connections', () => {
    expect(checkPorts(CONTEXT, GOOD.ports)).toMatchObject({
      status: 'ok',
      detail: '10.77.0.1 accepted connections on 53, 88, 389, 445',
    });
  });

  it('fails on a wrong DC address (the lab: refused), naming each port and the fix', () => {
    const result = checkPorts(
      CONTEXT,
      DC_PORTS.map(({ port }) => portProbe(port, 'ECONNREFUSED')),
    );
    expect([result.status, result.detail, result.fix]).toEqual([
      'fail',
      '10.77.0.1: 53 (DNS) refused (ECONNREFUSED), 88 (Kerberos) refused (ECONNREFUSED), 389 (LDAP) refused (ECONNREFUSED), 445 (SMB) refused (ECONNREFUSED)',
      'a refused port means nothing listens there: check that 10.77.0.1 is the domain controller and its services run',
    ]);
  });

  it('fails on a filtered port and on one not probed', () => {
    const result = checkPorts(CONTEXT, [
      portProbe(53, undefined),
      portProbe(88, 'timeout'),
      portProbe(389, undefined),
    ]);
    expect([result.status, result.detail, result.fix]).toEqual([
      'fail',
      '10.77.0.1: 88 (Kerberos) timed-out (timeout), 445 (SMB) not probed',
      'a port that times out or is unreachable is usually filtered: open it in the firewalls between this host and 10.77.0.1',
    ]);
  });
});
