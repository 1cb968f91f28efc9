import { describe, expect, it } from 'vitest';
import { FactError } from '../../../../lib/seamless/doctor/errors.ts';
import { MAX_KEYTAB_BYTES, parseKeytab } from '../../../../lib/seamless/keytab.ts';
import { keytabEntry as entry } from './keytab-fixtures.ts';

/**
 * Written by MIT ktutil 1.20 (Debian 12):
 *   addent -password -p HTTP/proxy.example.test@EXAMPLE.TEST -k 1 -e aes256-cts-hmac-sha1-96
 *   addent -password -p HTTP/PROXY@EXAMPLE.TEST -k 1 -e rc4-hmac
 *   addent -password -p HTTP/proxy.example.test@EXAMPLE.TEST -k 2 -e aes128-cts-hmac-sha1-96
 * `klist -kte` lists it as kvno 1, 1, 2 with aes256-cts-hmac-sha1-96, DEPRECATED:arcfour-hmac,
 * aes128-cts-hmac-sha1-96; timestamp 2026-11-23T03:15:51Z.
 */
const KTUTIL =
  'BQIAAABbAAIADEVYQU1QTEUuVEVTVAAESFRUUAAScHJveHkuZXhhbXBsZS50ZXN0AAAAAWsDr+cBABIAIDyIvRgdilgcutNJpPDgdDLHmFogChzixU6VBRuYX/5LAAAAAQAAAD4AAgAMRVhBTVBMRS5URVNUAARIVFRQAAVQUk9YWQAAAAFrA6/nAQAXABDK7BDi1c6tZ0hAMp7tjRAYAAAAAQAAAEsAAgAMRVhBTVBMRS5URVNUAARIVFRQABJwcm94eS5leGFtcGxlLnRlc3QAAAABawOv5wIAEQAQjSdZNAlno7GphdzEVr2hkAAAAAI=';

const fromKtutil = () => new Uint8Array(Buffer.from(KTUTIL, 'base64'));

const thrownOf = (fn: () => unknown): FactError => {
  try {
    fn();
  } catch (error) {
    if (error instanceof FactError) return error;
    throw error;
  }
  throw new Error('did not throw');
};

describe('parseKeytab', () => {
  it('reads what ktutil wrote as klist lists it, and never returns the keys', () => {
    const entries = parseKeytab(fromKtutil());
    expect(entries).toEqual([
      {
        kvno: 1,
        principal: 'HTTP/proxy.example.test@EXAMPLE.TEST',
        enctype: 'aes256-cts-hmac-sha1-96',
        enctypeShown: 'aes256-cts-hmac-sha1-96',
        timestamp: '2026-11-23T03:15:51.000Z',
      },
      {
        kvno: 1,
        principal: 'HTTP/PROXY@EXAMPLE.TEST',
        enctype: 'rc4-hmac',
        enctypeShown: 'rc4-hmac',
        timestamp: '2026-11-23T03:15:51.000Z',
      },
      {
        kvno: 2,
        principal: 'HTTP/proxy.example.test@EXAMPLE.TEST',
        enctype: 'aes128-cts-hmac-sha1-96',
        enctypeShown: 'aes128-cts-hmac-sha1-96',
        timestamp: '2026-11-23T03:15:51.000Z',
      },
    ]);
    expect(JSON.stringify(entries)).not.toMatch(/key"|contents/);
  });

  it('an empty keytab (the version only) has no entries; a zero length ends the file', () => {
    expect(parseKeytab(new Uint8Array([5, 2]))).toEqual([]);
    expect(parseKeytab(new Uint8Array([5, 2, 0, 0, 0, 0, 1, 2, 3]))).toEqual([]);
  });

  it('skips holes left by deleted entries and takes the 32-bit key version over the 8-bit one', () => {
    const hole = Buffer.concat([Buffer.from([0xff, 0xff, 0xff, 0xf0]), Buffer.alloc(16)]);
    const big = entry({
      names: ['HTTP', 'proxy.example.test'],
      realm: 'EXAMPLE.TEST',
      kvno8: 44,
      enctype: 18,
      kvno32: 300,
    });
    const zero = entry({ names: ['HTTP', 'PROXY'], realm: 'EXAMPLE.TEST', kvno8: 7, enctype: 23, kvno32: 0 });
    const entries = parseKeytab(Buffer.concat([Buffer.from([5, 2]), hole, big, zero]));
    expect(entries.map((e) => [e.principal, e.kvno, e.enctype])).toEqual([
      ['HTTP/proxy.example.test@EXAMPLE.TEST', 300, 'aes256-cts-hmac-sha1-96'],
      ['HTTP/PROXY@EXAMPLE.TEST', 7, 'rc4-hmac'],
    ]);
  });

  it('refuses every truncation of a real keytab with a FactError, never a crash or a wrong entry', () => {
    const bytes = fromKtutil();
    for (let cut = 0; cut < bytes.length; cut += 1) {
      const part = bytes.subarray(0, cut);
      let result: unknown;
      try {
        result = parseKeytab(part);
      } catch (error) {
        expect(error, `cut at ${cut}`).toBeInstanceOf(FactError);
        continue;
      }
      // Only cuts at a record boundary parse, giving the records before it.
      expect(
        [2, 2 + 4 + 0x5b, 2 + 4 + 0x5b + 4 + 0x3e].includes(cut),
        `cut at ${cut} parsed: ${JSON.stringify(result)}`,
      ).toBe(true);
    }
  });

  it('names what is wrong: not a keytab, an old format, a length past the end, too large', () => {
    expect(thrownOf(() => parseKeytab(Buffer.from('hello'))).message).toMatch(/not an MIT keytab/);
    expect(thrownOf(() => parseKeytab(new Uint8Array([5, 1]))).message).toMatch(/format 0x0501; only 0x0502/);
    expect(thrownOf(() => parseKeytab(new Uint8Array([5, 2, 0, 0, 1, 0, 0]))).message).toMatch(
      /record 1 \(byte 2\): its length 256 runs past the end/,
    );
    const inside = Buffer.concat([Buffer.from([5, 2, 0, 0, 0, 4]), Buffer.from([0, 1, 0, 9])]);
    expect(thrownOf(() => parseKeytab(inside)).message).toMatch(/the realm runs past the end of the entry/);
    const huge = thrownOf(() => parseKeytab(new Uint8Array(MAX_KEYTAB_BYTES + 1)));
    expect(huge.code).toBe('TOO_LARGE');
  });
});
