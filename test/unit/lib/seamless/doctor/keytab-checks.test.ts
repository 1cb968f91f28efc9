import { describe, expect, it } from 'vitest';
import { unavailable } from '../../../../../lib/seamless/doctor/check-result.ts';
import { parseKeyVersionNumber } from '../../../../../lib/seamless/doctor/key-version.ts';
import {
  checkEnctypes,
  checkKeytabSpn,
  checkKvno,
  httpPrincipals,
} from '../../../../../lib/seamless/doctor/keytab-checks.ts';
import { parseKlistKeytab } from '../../../../../lib/seamless/doctor/klist.ts';
import { klistOutput, LAB_KEYTAB_LINES } from './fixtures.ts';
import { CONTEXT, KEYTAB } from './lab-setup.ts';

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
