import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  agreementUsername,
  bindingIdleMs,
  DEFAULT_BINDING_IDLE_MINUTES,
  localMidnight,
  minutesToMs,
  portalSessionLimits,
  registrationExpiry,
  sessionLimitUpdate,
} from '../../../../lib/portal/session-limits.ts';
import { DEFAULT_PORTAL_SETTINGS, type PortalSettings } from '../../../../lib/portal/settings.ts';

const MINUTE = 60_000;
const settings = (fields: Partial<PortalSettings>): PortalSettings => ({
  ...DEFAULT_PORTAL_SETTINGS,
  ...fields,
});

/** Run with the process's time zone set to `zone` (Node reads TZ again when it is assigned). */
let savedTz: string | undefined;
beforeEach(() => {
  savedTz = process.env.TZ;
});
afterEach(() => {
  if (savedTz === undefined) delete process.env.TZ;
  else process.env.TZ = savedTz;
});

describe('minutesToMs', () => {
  it('is minutes × 60,000, and undefined for null (no limit)', () => {
    expect(minutesToMs(1)).toBe(MINUTE);
    expect(minutesToMs(525_600)).toBe(525_600 * MINUTE);
    expect(minutesToMs(null)).toBeUndefined();
  });
});

describe('localMidnight', () => {
  it.each([
    ['UTC', '2026-03-10', Date.UTC(2026, 2, 10)],
    ['Europe/Berlin', '2026-03-10', Date.UTC(2026, 2, 9, 23)],
    ['Europe/Berlin', '2026-07-01', Date.UTC(2026, 5, 30, 22)],
    ['America/New_York', '2026-11-01', Date.UTC(2026, 10, 1, 4)],
    ['Pacific/Kiritimati', '2026-01-01', Date.UTC(2025, 11, 31, 10)],
  ])('in %s, %s begins at the right instant', (zone, date, expected) => {
    process.env.TZ = zone;
    expect(localMidnight(date)).toBe(expected);
    expect(new Date(localMidnight(date)).getHours()).toBe(0);
  });

  it('on a day whose midnight a daylight-saving change skips, the day begins at its first instant (01:00)', () => {
    // São Paulo moved its clocks from 00:00 to 01:00 on 2018-11-04.
    process.env.TZ = 'America/Sao_Paulo';
    expect(localMidnight('2018-11-04')).toBe(Date.UTC(2018, 10, 4, 3));
    expect(new Date(localMidnight('2018-11-04')).getHours()).toBe(1);
  });
});

describe('portalSessionLimits', () => {
  const now = Date.UTC(2026, 2, 10, 12);

  it('hard timeout from now, idle timeout as ms', () => {
    expect(portalSessionLimits(settings({ idleTimeoutMinutes: 15, hardTimeoutMinutes: 480 }), now)).toEqual({
      expiresAt: now + 480 * MINUTE,
      idleTimeoutMs: 15 * MINUTE,
    });
  });

  it('leaves out a limit the settings do not set', () => {
    expect(portalSessionLimits(settings({ idleTimeoutMinutes: null, hardTimeoutMinutes: 60 }), now)).toEqual({
      expiresAt: now + 60 * MINUTE,
    });
    expect(portalSessionLimits(settings({ idleTimeoutMinutes: 5, hardTimeoutMinutes: null }), now)).toEqual({
      idleTimeoutMs: 5 * MINUTE,
    });
    expect(
      portalSessionLimits(settings({ idleTimeoutMinutes: null, hardTimeoutMinutes: null }), now),
    ).toEqual({});
  });
});

describe('registrationExpiry', () => {
  it('is the start of the clear date, server local time', () => {
    process.env.TZ = 'Europe/Berlin';
    const now = Date.UTC(2026, 2, 10, 12);
    expect(registrationExpiry(settings({ registrationClearDate: '2026-09-01' }), now)).toBe(
      Date.UTC(2026, 7, 31, 22),
    );
  });

  it('is none without a date', () => {
    expect(registrationExpiry(settings({ registrationClearDate: null }), 0)).toBeUndefined();
  });

  it('is none once the date has begun: a passed date did its work, later registrations last', () => {
    process.env.TZ = 'UTC';
    const s = settings({ registrationClearDate: '2026-09-01' });
    expect(registrationExpiry(s, Date.UTC(2026, 7, 31, 23, 59, 59, 999))).toBe(Date.UTC(2026, 8, 1));
    expect(registrationExpiry(s, Date.UTC(2026, 8, 1))).toBeUndefined();
    expect(registrationExpiry(s, Date.UTC(2027, 0, 1))).toBeUndefined();
  });
});

describe('bindingIdleMs', () => {
  it('is the idle timeout, or 60 minutes when none is set', () => {
    expect(bindingIdleMs(settings({ idleTimeoutMinutes: 10 }))).toBe(10 * MINUTE);
    expect(DEFAULT_BINDING_IDLE_MINUTES).toBe(60);
    expect(bindingIdleMs(settings({ idleTimeoutMinutes: null }))).toBe(60 * MINUTE);
  });
});

describe('sessionLimitUpdate', () => {
  it('gives the column values a save writes: null for no limit', () => {
    process.env.TZ = 'UTC';
    const now = Date.UTC(2026, 2, 10, 12);
    expect(
      sessionLimitUpdate(
        settings({ idleTimeoutMinutes: 20, hardTimeoutMinutes: 90, registrationClearDate: '2026-04-01' }),
        now,
      ),
    ).toEqual({
      idleTimeoutMs: 20 * MINUTE,
      hardTimeoutMs: 90 * MINUTE,
      registrationExpiresAt: Date.UTC(2026, 3, 1),
      bindingIdleMs: 20 * MINUTE,
    });
    expect(
      sessionLimitUpdate(
        settings({ idleTimeoutMinutes: null, hardTimeoutMinutes: null, registrationClearDate: null }),
        now,
      ),
    ).toEqual({
      idleTimeoutMs: null,
      hardTimeoutMs: null,
      registrationExpiresAt: null,
      bindingIdleMs: 60 * MINUTE,
    });
  });
});

describe('agreementUsername', () => {
  it('names the Device Group', () => {
    expect(agreementUsername('Library PCs')).toBe('agreement:Library PCs');
  });
});
