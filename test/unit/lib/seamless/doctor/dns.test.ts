import { describe, expect, it } from 'vitest';
import { thrownOf } from '../../../../support/thrown.ts';
import {
  aRecordsAnswer,
  dnsFailure,
  dnsFailureOf,
  MAX_DNS_RECORDS,
  normaliseHostName,
  ptrRecordsAnswer,
} from '../../../../../lib/seamless/doctor/dns.ts';
import { FactError } from '../../../../../lib/seamless/doctor/errors.ts';

const refusal = (run: () => unknown): FactError => thrownOf(FactError, run);

describe('DNS answers', () => {
  it("takes the lab's A record and its PTR names, normalised", () => {
    expect(aRecordsAnswer(['10.77.0.2'])).toEqual({ ok: true, records: ['10.77.0.2'] });
    expect(aRecordsAnswer(['10.77.0.2', '10.0.0.1', '10.77.0.2'])).toEqual({
      ok: true,
      records: ['10.77.0.2', '10.0.0.1'],
    });
    expect(ptrRecordsAnswer(['proxy.example.test.'])).toEqual({ ok: true, records: ['proxy.example.test'] });
    expect(ptrRecordsAnswer(['Other.Example.Test.', 'other.example.test'])).toEqual({
      ok: true,
      records: ['other.example.test'],
    });
  });

  it('treats an empty list as no records', () => {
    expect(aRecordsAnswer([])).toEqual({ ok: false, failure: 'no-records', code: 'ENODATA' });
    expect(ptrRecordsAnswer([])).toEqual({ ok: false, failure: 'no-records', code: 'ENODATA' });
  });

  it("folds node:dns's error codes (NXDOMAIN is ENOTFOUND)", () => {
    expect(dnsFailure('ENOTFOUND')).toEqual({ ok: false, failure: 'no-such-name', code: 'ENOTFOUND' });
    expect(
      ['ENODATA', 'ETIMEOUT', 'ECONNREFUSED', 'EREFUSED', 'ESERVFAIL', 'EBADRESP'].map(dnsFailureOf),
    ).toEqual(['no-records', 'timeout', 'refused', 'refused', 'server-failure', 'other']);
  });

  it('refuses records that are not addresses or host names, naming them', () => {
    expect(refusal(() => aRecordsAnswer(['10.77.0.256'])).message).toBe(
      'A records: "10.77.0.256" is not an IPv4 address',
    );
    expect(refusal(() => aRecordsAnswer(['::1'])).code).toBe('MALFORMED');
    expect(refusal(() => aRecordsAnswer([7])).message).toBe('A records: number is not an IPv4 address');
    expect(refusal(() => ptrRecordsAnswer(['bad name.example.test.'])).message).toBe(
      'PTR records: "bad name.example.test." is not a host name',
    );
    expect(refusal(() => ptrRecordsAnswer(['10.77.0.2'])).code).toBe('MALFORMED');
    expect(refusal(() => ptrRecordsAnswer('proxy' as unknown as string[])).code).toBe('MALFORMED');
  });

  it('refuses more records than the cap', () => {
    const many = Array.from({ length: MAX_DNS_RECORDS + 1 }, (_, i) => `10.0.0.${i % 250}`);
    const error = refusal(() => aRecordsAnswer(many));
    expect({ code: error.code, message: error.message }).toEqual({
      code: 'TOO_LARGE',
      message: `A records: has ${MAX_DNS_RECORDS + 1} records; at most ${MAX_DNS_RECORDS} are read`,
    });
    expect(aRecordsAnswer(many.slice(0, MAX_DNS_RECORDS)).ok).toBe(true);
  });

  it('normaliseHostName drops the root dot and case, refuses addresses and over-long names', () => {
    expect(normaliseHostName('Proxy.Example.Test.')).toBe('proxy.example.test');
    expect(normaliseHostName('.')).toBeUndefined();
    expect(normaliseHostName('10.77.0.2')).toBeUndefined();
    expect(normaliseHostName(`${'a'.repeat(63)}.`.repeat(4))).toBeUndefined();
  });
});
