import { describe, expect, it } from 'vitest';
import {
  CHECK_IDS,
  checkClock,
  checkDnsA,
  checkDnsPtr,
  checkEnctypes,
  checkKeytabAccess,
  checkKeytabSpn,
  checkKvno,
  checkPorts,
  checkPrivilegedPipe,
  checkWinbind,
  type DoctorContext,
  type DoctorFacts,
  httpPrincipals,
  checkClientsUseFqdn,
  reverseName,
  runDoctorChecks,
  showDuration,
  unavailable,
} from '../../../../../lib/seamless/doctor/checks.ts';
import { clockFromCurrentTime, parseNetAdsInfoOffset } from '../../../../../lib/seamless/doctor/clock.ts';
import { aRecordsAnswer, dnsFailure, ptrRecordsAnswer } from '../../../../../lib/seamless/doctor/dns.ts';
import { fileFactsOf, parseIdOutput } from '../../../../../lib/seamless/doctor/file-facts.ts';
import { parseKeyVersionNumber } from '../../../../../lib/seamless/doctor/key-version.ts';
import { parseKlistKeytab } from '../../../../../lib/seamless/doctor/klist.ts';
import { DC_PORTS, portProbe } from '../../../../../lib/seamless/doctor/ports.ts';
import {
  CURRENT_TIME,
  ID_PROXY,
  klistOutput,
  LAB_KEYTAB_LINES,
  NET_ADS_INFO_GOOD,
  NET_ADS_INFO_SKEWED,
} from './fixtures.ts';

const CONTEXT: DoctorContext = {
  fqdn: 'proxy.example.test',
  realm: 'EXAMPLE.TEST',
  serverVersion: '2012',
  dc: '10.77.0.1',
  keytabPath: '/var/lib/doorman/samba/http.keytab',
  privilegedPipeDir: '/var/lib/doorman/samba/state/winbindd_privileged',
  helperGroup: 'proxy',
};
const KEYTAB = parseKlistKeytab(klistOutput(LAB_KEYTAB_LINES));
const PROXY = parseIdOutput(ID_PROXY);
const stat = (mode: number, uid: number, gid: number) => fileFactsOf({ mode, uid, gid });
const ptrAnswer = (names: string[]) => [{ address: '10.77.0.2', answer: ptrRecordsAnswer(names) }];

/** The lab's working set-up, as the I/O shell would hand it over. */
const GOOD: DoctorFacts = {
  dns: {
    a: aRecordsAnswer(['10.77.0.2']),
    localAddresses: ['127.0.0.1', '10.77.0.2'],
    ptr: ptrAnswer(['proxy.example.test.']),
  },
  clock: parseNetAdsInfoOffset(NET_ADS_INFO_GOOD),
  ports: DC_PORTS.map(({ port }) => portProbe(port, undefined)),
  keytab: KEYTAB,
  dcKvno: parseKeyVersionNumber(['1']),
  keytabFile: stat(0o100640, 0, 13),
  privilegedPipeDir: stat(0o040750, 0, 13),
  helperUser: PROXY,
  winbind: { running: true, trust: true },
  ntlmClients: { addresses: 0, clients: [] },
};

describe('the doctor on the working set-up', () => {
  it('passes every check, one per id in order, no client having used NTLM', () => {
    const results = runDoctorChecks(CONTEXT, GOOD);
    expect(results.map((r) => r.id)).toEqual([...CHECK_IDS]);
    expect(results.map((r) => r.status)).toEqual([...Array<string>(11).fill('ok')]);
    expect(results.every((r) => r.ok && r.fix === undefined)).toBe(true);
  });
});

describe('the doctor on the broken set-up', () => {
  it("reports each of the lab's breaks at once, each with its fix", () => {
    const results = runDoctorChecks(CONTEXT, {
      ...GOOD,
      dns: { ...GOOD.dns, ptr: ptrAnswer(['other.example.test.']) },
      clock: parseNetAdsInfoOffset(NET_ADS_INFO_SKEWED),
      ports: DC_PORTS.map(({ port }) => portProbe(port, port === 445 ? 'ECONNREFUSED' : undefined)),
      dcKvno: 2,
      keytabFile: stat(0o100600, 0, 13),
      privilegedPipeDir: stat(0o040750, 0, 0),
      winbind: { running: true, trust: 'could not authenticate' },
      ntlmClients: { addresses: 1, clients: [{ address: '10.0.0.7', handshakes: 3, lastSeen: 0 }] },
    });
    expect(results.map((r) => [r.id, r.status])).toEqual([
      ['dns-a', 'ok'],
      ['dns-ptr', 'fail'],
      ['clock', 'fail'],
      ['ports', 'fail'],
      ['keytab-spn', 'ok'],
      ['kvno', 'fail'],
      ['enctypes', 'ok'],
      ['keytab-access', 'fail'],
      ['priv-pipe', 'fail'],
      ['winbind', 'fail'],
      ['clients-fqdn', 'note'],
    ]);
    expect(results.filter((r) => r.status === 'fail').every((r) => !r.ok && (r.fix ?? '') !== '')).toBe(true);
  });
});

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

describe('keytab-spn', () => {
  it('passes with HTTP/<fqdn> and HTTP/<SHORT> only', () => {
    expect(httpPrincipals(CONTEXT)).toEqual({
      fqdn: 'HTTP/proxy.example.test@EXAMPLE.TEST',
      short: 'HTTP/PROXY@EXAMPLE.TEST',
    });
    expect(checkKeytabSpn(CONTEXT, KEYTAB)).toMatchObject({
      status: 'ok',
      detail:
        '/var/lib/doorman/samba/http.keytab holds HTTP/proxy.example.test@EXAMPLE.TEST and HTTP/PROXY@EXAMPLE.TEST, nothing else',
    });
  });

  it('fails on an empty keytab or one without the short name', () => {
    expect(checkKeytabSpn(CONTEXT, [])).toMatchObject({
      status: 'fail',
      detail:
        '/var/lib/doorman/samba/http.keytab: it is empty: no keys for HTTP/proxy.example.test@EXAMPLE.TEST and HTTP/PROXY@EXAMPLE.TEST',
    });
    const noShort = KEYTAB.filter((e) => !e.principal.startsWith('HTTP/PROXY@'));
    expect(checkKeytabSpn(CONTEXT, noShort).detail).toBe(
      '/var/lib/doorman/samba/http.keytab: no keys for HTTP/PROXY@EXAMPLE.TEST',
    );
  });

  it('fails on machine keys in the keytab (net ads keytab create), with the fix', () => {
    const created = parseKlistKeytab(
      klistOutput([
        ...LAB_KEYTAB_LINES,
        '   1 11/22/26 21:28:36 PROXY$@EXAMPLE.TEST (aes256-cts-hmac-sha1-96)',
        '   1 11/22/26 21:28:36 host/proxy.example.test@EXAMPLE.TEST (aes256-cts-hmac-sha1-96)',
      ]),
    );
    const result = checkKeytabSpn(CONTEXT, created);
    expect([result.status, result.detail, result.fix]).toEqual([
      'fail',
      "/var/lib/doorman/samba/http.keytab: it also holds PROXY$@EXAMPLE.TEST, host/proxy.example.test@EXAMPLE.TEST: the machine account's own keys, readable by Squid's helper user (a keytab made with `net ads keytab create`)",
      'run Enable seamless again (`doorman seamless enable`): it flushes the keytab and writes the HTTP keys afresh (net ads keytab flush -P; net ads keytab add_update_ads HTTP -P)',
    ]);
  });
});

describe('kvno', () => {
  it("passes when the keytab's key version is the DC's (lab: 1 and 1)", () => {
    expect(checkKvno(CONTEXT, KEYTAB, 1)).toMatchObject({
      status: 'ok',
      detail: 'key version 1 in the keytab and on the domain controller',
    });
  });

  it('fails on the stale keytab a re-join leaves (lab: keytab 1, DC 2), naming the fix', () => {
    const result = checkKvno(CONTEXT, KEYTAB, parseKeyVersionNumber('2'));
    expect([result.status, result.detail, result.fix]).toEqual([
      'fail',
      "the keytab has key version 1 of HTTP/proxy.example.test@EXAMPLE.TEST, the domain controller's current one is 2: the computer account's password changed (a re-join, or a password change) after the keytab was written, so tickets cannot be decrypted",
      'run Enable seamless again (`doorman seamless enable`): it flushes the keytab and writes the HTTP keys afresh (net ads keytab flush -P; net ads keytab add_update_ads HTTP -P)',
    ]);
  });

  it('uses the newest key version in the keytab, and fails when it is ahead', () => {
    const both = [...KEYTAB, ...KEYTAB.map((e) => ({ ...e, kvno: 2 }))];
    expect(checkKvno(CONTEXT, both, 2).status).toBe('ok');
    expect(checkKvno(CONTEXT, both, 1).detail).toContain('the keytab is ahead of the account');
    expect(checkKvno(CONTEXT, [], 1).detail).toBe(
      'the keytab holds no keys for HTTP/proxy.example.test@EXAMPLE.TEST',
    );
  });

  it("is skipped when the DC's value could not be read", () => {
    expect(checkKvno(CONTEXT, KEYTAB, unavailable('msDS-KeyVersionNumber: missing'))).toMatchObject({
      status: 'skipped',
      detail:
        "the domain controller's key version (msDS-KeyVersionNumber) could not be read: msDS-KeyVersionNumber: missing",
    });
  });
});

describe('enctypes', () => {
  it("passes with the lab's keys for every server version (net ads writes all three)", () => {
    for (const serverVersion of ['2003', '2008', '2012'] as const) {
      expect(checkEnctypes({ ...CONTEXT, serverVersion }, KEYTAB).status).toBe('ok');
    }
    expect(checkEnctypes(CONTEXT, KEYTAB).detail).toBe(
      'HTTP/proxy.example.test@EXAMPLE.TEST (key version 1) has aes256-cts-hmac-sha1-96, aes128-cts-hmac-sha1-96, DEPRECATED:arcfour-hmac',
    );
  });

  it('fails when an expected type is missing, naming it', () => {
    const rc4Only = KEYTAB.filter((e) => e.enctype === 'rc4-hmac');
    expect(checkEnctypes({ ...CONTEXT, serverVersion: '2003' }, rc4Only).status).toBe('ok');
    const result = checkEnctypes(CONTEXT, rc4Only);
    expect([result.status, result.detail]).toEqual([
      'fail',
      'HTTP/proxy.example.test@EXAMPLE.TEST (key version 1) has DEPRECATED:arcfour-hmac; Windows Server 2012 set-ups need aes256-cts-hmac-sha1-96, aes128-cts-hmac-sha1-96, rc4-hmac: missing aes256-cts-hmac-sha1-96, aes128-cts-hmac-sha1-96',
    ]);
    const aesOnly = KEYTAB.filter((e) => e.enctype !== 'rc4-hmac');
    expect(checkEnctypes({ ...CONTEXT, serverVersion: '2003' }, aesOnly).detail).toContain(
      'missing rc4-hmac',
    );
  });

  it('judges the newest key version only', () => {
    const rc4 = KEYTAB.filter((e) => e.enctype === 'rc4-hmac').slice(0, 1);
    const stale = [...KEYTAB, ...rc4.map((e) => ({ ...e, kvno: 2 }))];
    expect(checkEnctypes(CONTEXT, stale).detail).toContain(
      '(key version 2) has DEPRECATED:arcfour-hmac; Windows Server 2012 set-ups need',
    );
  });
});

describe('keytab-access', () => {
  it('passes for the lab: root:proxy 0640', () => {
    expect(checkKeytabAccess(CONTEXT, { file: GOOD.keytabFile, user: PROXY })).toMatchObject({
      status: 'ok',
      detail:
        '/var/lib/doorman/samba/http.keytab (uid 0, gid 13, mode 0640) is readable by proxy, not by others',
    });
  });

  it('fails on the lab break (chmod 600), with the fix', () => {
    const result = checkKeytabAccess(CONTEXT, { file: stat(0o100600, 0, 13), user: PROXY });
    expect([result.status, result.detail, result.fix]).toEqual([
      'fail',
      '/var/lib/doorman/samba/http.keytab (uid 0, gid 13, mode 0600): proxy may not read it',
      'chown root:proxy /var/lib/doorman/samba/http.keytab; chmod 640 /var/lib/doorman/samba/http.keytab',
    ]);
  });

  it('fails on the wrong group, and on a world-readable keytab', () => {
    expect(checkKeytabAccess(CONTEXT, { file: stat(0o100640, 0, 0), user: PROXY }).detail).toContain(
      'proxy may not read it',
    );
    expect(checkKeytabAccess(CONTEXT, { file: stat(0o100644, 0, 13), user: PROXY }).detail).toBe(
      '/var/lib/doorman/samba/http.keytab (uid 0, gid 13, mode 0644): anyone on this host may read or write it, and impersonate the proxy with its keys',
    );
    expect(checkKeytabAccess(CONTEXT, { file: stat(0o040750, 0, 13), user: PROXY }).detail).toContain(
      'it is a directory, not a file',
    );
  });

  it('is skipped when the keytab or the user is missing', () => {
    expect(checkKeytabAccess(CONTEXT, { file: unavailable('ENOENT'), user: PROXY }).status).toBe('skipped');
    expect(
      checkKeytabAccess(CONTEXT, { file: GOOD.keytabFile, user: unavailable('no such user') }),
    ).toMatchObject({
      status: 'skipped',
      detail: "Squid's helper user could not be looked up: no such user",
    });
  });
});

describe('priv-pipe', () => {
  it('passes for the lab: root:proxy 0750', () => {
    expect(checkPrivilegedPipe(CONTEXT, { file: GOOD.privilegedPipeDir, user: PROXY }).status).toBe('ok');
  });

  it('fails on the lab break (chgrp root), with the fix', () => {
    const result = checkPrivilegedPipe(CONTEXT, { file: stat(0o040750, 0, 0), user: PROXY });
    expect([result.status, result.detail, result.fix]).toEqual([
      'fail',
      '/var/lib/doorman/samba/state/winbindd_privileged (uid 0, gid 0, mode 0750): proxy may not enter it (not its owner, and not in its group 0)',
      'chgrp proxy /var/lib/doorman/samba/state/winbindd_privileged; chmod 0750 /var/lib/doorman/samba/state/winbindd_privileged',
    ]);
  });

  it('fails on a mode other than 0750, even one that lets proxy in', () => {
    expect(checkPrivilegedPipe(CONTEXT, { file: stat(0o040755, 0, 13), user: PROXY }).detail).toBe(
      '/var/lib/doorman/samba/state/winbindd_privileged (uid 0, gid 13, mode 0755): mode 0755, but winbindd wants 0750',
    );
    expect(checkPrivilegedPipe(CONTEXT, { file: stat(0o100750, 0, 13), user: PROXY }).detail).toContain(
      'it is a file, not a directory',
    );
  });
});

describe('clients-fqdn', () => {
  const T = Date.UTC(2026, 10, 23, 12, 0);
  const seen = (...clients: [string, number][]) => ({
    addresses: clients.length,
    clients: clients.map(([address, handshakes]) => ({ address, handshakes, lastSeen: T })),
  });

  it('passes when no handshake carried NTLM in the last day', () => {
    expect(checkClientsUseFqdn(CONTEXT, seen(), 3128)).toEqual({
      id: 'clients-fqdn',
      ok: true,
      status: 'ok',
      title: 'Clients address the proxy by its FQDN',
      detail: 'no handshake carried NTLM in the last day',
    });
  });

  it('names the addresses that used NTLM, with their counts, in a note with the FQDN (and port) to set', () => {
    const result = checkClientsUseFqdn(CONTEXT, seen(['10.0.0.7', 12], ['10.0.0.9', 1]), 3128);
    expect(result).toMatchObject({ id: 'clients-fqdn', ok: true, status: 'note' });
    expect(result.detail).toMatch(
      /^2 client addresses used NTLM in the last day: 10\.0\.0\.7 \(12 handshakes, last 2026-11-23T12:00:00\.000Z\), 10\.0\.0\.9 \(1 handshake, last 2026-11-23T12:00:00\.000Z\)\. Windows clients ask/,
    );
    expect(result.fix).toBe(
      "set the proxy as proxy.example.test:3128 in the clients' settings (group policy, PAC file), never as its IP address",
    );
  });

  it('says how many more there were than it names, and counts handshakes Squid sent no address for', () => {
    const result = checkClientsUseFqdn(CONTEXT, { ...seen(['10.0.0.7', 5], ['-', 4]), addresses: 30 });
    expect(result.detail).toContain('29 client addresses used NTLM in the last day: 10.0.0.7 (5 handshakes');
    expect(result.detail).toContain(', and 28 more; 4 NTLM handshakes from addresses not recorded');
  });

  it('is the advice alone when the record cannot be read', () => {
    expect(checkClientsUseFqdn(CONTEXT, unavailable('not recorded before the join'))).toMatchObject({
      status: 'note',
      ok: true,
      detail: expect.stringContaining('(which clients did is not known: not recorded before the join)'),
      fix: "set the proxy as proxy.example.test in the clients' settings (group policy, PAC file), never as its IP address",
    });
  });
});

describe('winbind', () => {
  it('passes when winbindd answers and the trust works; fails with the fix otherwise; skips when not asked', () => {
    expect(checkWinbind(CONTEXT, { running: true, trust: true })).toMatchObject({ status: 'ok' });
    expect(checkWinbind(CONTEXT, { running: false })).toMatchObject({
      status: 'fail',
      detail: 'winbindd does not answer `wbinfo -p`',
      fix: expect.stringContaining('doorman seamless enable'),
    });
    expect(checkWinbind(CONTEXT, { running: true, trust: 'NT_STATUS_ACCESS_DENIED' })).toMatchObject({
      status: 'fail',
      detail: 'winbindd runs, but the trust to EXAMPLE.TEST fails (wbinfo -t): NT_STATUS_ACCESS_DENIED',
      fix: expect.stringContaining('re-joins'),
    });
    expect(checkWinbind(CONTEXT, unavailable('not joined'))).toMatchObject({ status: 'skipped', ok: false });
  });
});
