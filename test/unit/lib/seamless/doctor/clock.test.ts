import { describe, expect, it } from 'vitest';
import { thrownOf } from '../../../../support/thrown.ts';
import {
  clockFromCurrentTime,
  MAX_CURRENT_TIME_CHARS,
  parseGeneralizedTime,
  parseNetAdsInfoOffset,
} from '../../../../../lib/seamless/doctor/clock.ts';
import { FactError } from '../../../../../lib/seamless/doctor/errors.ts';
import { CURRENT_TIME, NET_ADS_INFO_GOOD, NET_ADS_INFO_SKEWED } from './fixtures.ts';

const refusal = (run: () => unknown): FactError => thrownOf(FactError, run);

describe('the DC clock', () => {
  it("reads the rootDSE's currentTime (the lab's value) and its variants", () => {
    expect(parseGeneralizedTime(CURRENT_TIME)).toBe(Date.parse('2026-11-22T21:33:45Z'));
    expect(parseGeneralizedTime('20261122213345Z')).toBe(Date.parse('2026-11-22T21:33:45Z'));
    expect(parseGeneralizedTime('20261122213345.25Z')).toBe(Date.parse('2026-11-22T21:33:45.250Z'));
    expect(parseGeneralizedTime('20261122223345+0100')).toBe(Date.parse('2026-11-22T21:33:45Z'));
  });

  it('gives the offset as DC minus local: a local clock 10 minutes fast is -600', () => {
    const dc = Date.parse('2026-11-22T21:33:45Z');
    expect(clockFromCurrentTime(CURRENT_TIME, dc + 600_000)).toEqual({
      offsetSeconds: -600,
      source: 'rootDSE currentTime',
    });
    expect(clockFromCurrentTime(CURRENT_TIME, dc - 61_000).offsetSeconds).toBe(61);
  });

  it('refuses what is no time or no real date, naming the value', () => {
    expect(refusal(() => parseGeneralizedTime('2026-11-22T21:33:45Z')).message).toBe(
      'currentTime: "2026-11-22T21:33:45Z" is not an LDAP GeneralizedTime such as 20261122213345.0Z',
    );
    expect(refusal(() => parseGeneralizedTime('20261131213345.0Z')).message).toBe(
      'currentTime: "20261131213345.0Z" is not a real date and time',
    );
    for (const text of [
      '20261122240000Z',
      '20261122236000Z',
      '20261122235961Z',
      '20261132000000Z',
      '20261300000000Z',
    ]) {
      expect(refusal(() => parseGeneralizedTime(text)).message).toBe(
        `currentTime: "${text}" is not a real date and time`,
      );
    }
    // A leap second is a real time.
    expect(parseGeneralizedTime('20261231235960Z')).toBe(Date.parse('2027-01-01T00:00:00Z'));
    expect(refusal(() => parseGeneralizedTime('1'.repeat(MAX_CURRENT_TIME_CHARS + 1))).code).toBe(
      'TOO_LARGE',
    );
  });

  it("reads net ads info's offset, good (0) and with the local clock 10 minutes fast (-600)", () => {
    expect(parseNetAdsInfoOffset(NET_ADS_INFO_GOOD)).toEqual({ offsetSeconds: 0, source: 'net ads info' });
    expect(parseNetAdsInfoOffset(NET_ADS_INFO_SKEWED).offsetSeconds).toBe(-600);
    expect(refusal(() => parseNetAdsInfoOffset('Realm: EXAMPLE.TEST\n')).message).toBe(
      'net ads info: has no "Server time offset:" line',
    );
    expect(refusal(() => parseNetAdsInfoOffset('Server time offset: ten')).message).toBe(
      'net ads info: "Server time offset: ten": the offset is not a whole number of seconds',
    );
  });
});
