import { showValue } from '../../errors.ts';
import { capText, FactError } from './errors.ts';

/**
 * The domain controller's time against the local clock. Two sources, both proven in the lab (REPORT §6.5; a
 * Samba DC serves no NTP, and `kinit` hides skew, so neither of those): the rootDSE's `currentTime`, read by an
 * anonymous LDAP search before the join (`currentTime: 20261122213345.0Z`), and once joined `net ads info -P`
 * (`Server time offset: -600` with the local clock 10 minutes fast).
 */

export interface ClockReading {
  /** The DC's time minus the local time, in seconds: negative when the local clock is ahead (fast). */
  offsetSeconds: number;
  /** Where the DC's time came from, for the detail. */
  source: 'rootDSE currentTime' | 'net ads info';
}

/** A GeneralizedTime of an LDAP server is about 20 characters; a line of `net ads info` well under 200. */
export const MAX_CURRENT_TIME_CHARS = 64;
export const MAX_NET_ADS_INFO_CHARS = 16 * 1024;

// RFC 4517 §3.3.13 GeneralizedTime: century year month day hour [minute [second]] [fraction] g-time-zone.
// Active Directory and Samba send all of minute and second, a fraction `.0`, and `Z`; an offset is taken too.
const GENERALIZED_TIME = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{4})$/;

/** `20261122213345.0Z` → milliseconds since the epoch. Throws FactError naming the value when it is not one. */
export function parseGeneralizedTime(text: string): number {
  const field = 'currentTime';
  capText(field, text, MAX_CURRENT_TIME_CHARS);
  const match = GENERALIZED_TIME.exec(text.trim());
  if (match === null) {
    throw new FactError(
      'MALFORMED',
      field,
      `${showValue(text)} is not an LDAP GeneralizedTime such as 20261122213345.0Z`,
    );
  }
  const [, year, month, day, hour, minute, second, fraction = '', zone = 'Z'] = match;
  const parts = [year, month, day, hour, minute, second].map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const [y, mo, d, h, mi, s] = parts;
  // A leap second (:60) counts as the next second; Date has none.
  const utc = Date.UTC(y, mo - 1, d, h, mi, Math.min(s, 59)) + (s === 60 ? 1000 : 0);
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, 0));
  // Date.UTC rolls 31 November over to 1 December (and day 0 back to the month before): the year and month
  // read back tell a real date from one that only looks so. Hours and minutes are bounded here, as Date would
  // roll them over too.
  if (date.getUTCFullYear() !== y || date.getUTCMonth() !== mo - 1 || h > 23 || mi > 59 || s > 60) {
    throw new FactError('MALFORMED', field, `${showValue(text)} is not a real date and time`);
  }
  const millis = fraction === '' ? 0 : Math.floor(Number(`0.${fraction}`) * 1000);
  let offsetMinutes = 0;
  if (zone !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    offsetMinutes = sign * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(3, 5)));
  }
  return utc + millis - offsetMinutes * 60_000;
}

/**
 * The rootDSE's `currentTime` against the local clock at the moment of the answer. `localTime` is best the
 * middle of the request's round trip; the I/O shell measures it with its injected clock.
 */
export function clockFromCurrentTime(currentTime: string, localTime: number): ClockReading {
  const dc = parseGeneralizedTime(currentTime);
  return { offsetSeconds: Math.round((dc - localTime) / 1000), source: 'rootDSE currentTime' };
}

const OFFSET_LINE = 'Server time offset:';
const SIGNED = /^-?\d{1,10}$/;

/** `net ads info -P`'s `Server time offset: -600` (the DC's time minus the local time, in seconds). */
export function parseNetAdsInfoOffset(text: string): ClockReading {
  const field = 'net ads info';
  capText(field, text, MAX_NET_ADS_INFO_CHARS);
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line.startsWith(OFFSET_LINE)) continue;
    const value = line.slice(OFFSET_LINE.length).trim();
    if (!SIGNED.test(value)) {
      throw new FactError(
        'MALFORMED',
        field,
        `${showValue(line)}: the offset is not a whole number of seconds`,
      );
    }
    return { offsetSeconds: Number(value), source: 'net ads info' };
  }
  throw new FactError('MISSING', field, `has no "${OFFSET_LINE}" line`);
}
