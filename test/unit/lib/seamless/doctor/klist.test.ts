import { describe, expect, it } from 'vitest';
import { thrownOf } from '../../../../support/thrown.ts';
import { FactError } from '../../../../../lib/seamless/doctor/errors.ts';
import {
  canonicalEnctype,
  MAX_KLIST_CHARS,
  parseKlistKeytab,
} from '../../../../../lib/seamless/doctor/klist.ts';
import { KLIST_HEADER, klistOutput, LAB_KEYTAB_LINES } from './fixtures.ts';

const refusal = (text: string): FactError => thrownOf(FactError, () => parseKlistKeytab(text));

describe('parseKlistKeytab', () => {
  it("reads the lab's keytab: kvno, principal and enctype of each of the six keys", () => {
    const entries = parseKlistKeytab(klistOutput(LAB_KEYTAB_LINES));
    expect(entries.map((e) => [e.kvno, e.principal, e.enctype])).toEqual([
      [1, 'HTTP/proxy.example.test@EXAMPLE.TEST', 'aes256-cts-hmac-sha1-96'],
      [1, 'HTTP/PROXY@EXAMPLE.TEST', 'aes256-cts-hmac-sha1-96'],
      [1, 'HTTP/proxy.example.test@EXAMPLE.TEST', 'aes128-cts-hmac-sha1-96'],
      [1, 'HTTP/PROXY@EXAMPLE.TEST', 'aes128-cts-hmac-sha1-96'],
      [1, 'HTTP/proxy.example.test@EXAMPLE.TEST', 'rc4-hmac'],
      [1, 'HTTP/PROXY@EXAMPLE.TEST', 'rc4-hmac'],
    ]);
    expect(entries[4]).toEqual({
      kvno: 1,
      principal: 'HTTP/proxy.example.test@EXAMPLE.TEST',
      enctype: 'rc4-hmac',
      enctypeShown: 'DEPRECATED:arcfour-hmac',
      timestamp: '11/22/26 21:28:36',
    });
  });

  it('takes CRLF line ends, no timestamp (klist -ke) and another locale, and an empty keytab', () => {
    const entries = parseKlistKeytab(
      `${KLIST_HEADER.join('\r\n')}\r\n   2 HTTP/a.example.test@EXAMPLE.TEST (aes128-cts)\r\n  12 22.11.2026 21:28:36 HTTP/b@EXAMPLE.TEST (aes256-cts-hmac-sha1-96)\r\n`,
    );
    expect(entries.map((e) => [e.kvno, e.principal, e.enctype, e.timestamp])).toEqual([
      [2, 'HTTP/a.example.test@EXAMPLE.TEST', 'aes128-cts-hmac-sha1-96', ''],
      [12, 'HTTP/b@EXAMPLE.TEST', 'aes256-cts-hmac-sha1-96', '22.11.2026 21:28:36'],
    ]);
    expect(parseKlistKeytab(klistOutput([]))).toEqual([]);
  });

  it('refuses what is not a listing, naming the line', () => {
    const bad = refusal(klistOutput(['   1 11/22/26 21:28:36 HTTP/proxy.example.test@EXAMPLE.TEST']));
    expect({ code: bad.code, field: bad.field, message: bad.message }).toEqual({
      code: 'MALFORMED',
      field: 'klist',
      message:
        'klist: line 4 "1 11/22/26 21:28:36 HTTP/proxy.example.test@EXAMPLE.TEST" is not a keytab entry "KVNO [timestamp] PRINCIPAL (ENCTYPE)" as klist -kte lists them',
    });
    expect(refusal('klist: Permission denied while starting keytab scan').code).toBe('MALFORMED');
    expect(refusal('').message).toBe('klist: is empty: klist -kte prints at least "Keytab name: …"');
    expect(refusal(klistOutput(['   x 11/22/26 HTTP/a@B (aes128-cts)'])).code).toBe('MALFORMED');
    expect(refusal(klistOutput(['   1 HTTP/a@B ()'])).message).toContain('names no encryption type');
    expect(refusal(klistOutput(['   4294967296 HTTP/a@B (rc4-hmac)'])).message).toContain(
      'larger than 32 bits',
    );
  });

  it('refuses a listing with keys in it (klist -K) without quoting the key', () => {
    const error = refusal(
      klistOutput(['   1 11/22/26 21:28:36 HTTP/a@B (aes128-cts-hmac-sha1-96) (0x00112233deadbeef)']),
    );
    expect(error.message).toBe('klist: line 4 carries key contents (klist -K); run klist -kte, without -K');
    expect(error.message).not.toContain('deadbeef');
  });

  it('refuses more than the cap before scanning it', () => {
    const error = refusal(klistOutput(LAB_KEYTAB_LINES).padEnd(MAX_KLIST_CHARS + 1, ' '));
    expect({ code: error.code, message: error.message }).toEqual({
      code: 'TOO_LARGE',
      message: `klist: is ${MAX_KLIST_CHARS + 1} characters long; at most ${MAX_KLIST_CHARS} are read`,
    });
    expect(parseKlistKeytab(klistOutput(LAB_KEYTAB_LINES).padEnd(MAX_KLIST_CHARS, ' '))).toHaveLength(6);
  });
});

describe('canonicalEnctype', () => {
  it("maps klist's names to krb5.conf's", () => {
    expect(canonicalEnctype('DEPRECATED:arcfour-hmac')).toBe('rc4-hmac');
    expect(canonicalEnctype('arcfour-hmac-md5')).toBe('rc4-hmac');
    expect(canonicalEnctype('AES256-CTS')).toBe('aes256-cts-hmac-sha1-96');
    expect(canonicalEnctype('camellia256-cts-cmac')).toBe('camellia256-cts-cmac');
  });
});
