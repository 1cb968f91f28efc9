import type { PortalSettings } from './settings.ts';

/**
 * The limits a portal-made session carries, computed from the portal settings: used by the splash page to
 * start a session, by the address binding (lib/portal/address-binding.ts) and by PortalSettingsStore, which
 * applies a change of the settings to the sessions already open (see sessionLimitUpdate below). Pure: the
 * time is passed in.
 *
 * - 'portal' (Authentication) and 'agreement' (Usage Agreement Only): portalSessionLimits();
 * - 'registration' keyed by MAC: expiresAt = registrationExpiry(settings, now), no idle limit;
 * - 'registration' keyed by IP (the IPv6 address binding): the registration's expiresAt,
 *   idleTimeoutMs = bindingIdleMs(settings).
 */

export const MINUTE_MS = 60_000;

/** An address binding's idle limit when the settings set none: a binding must not outlive the address's use. */
export const DEFAULT_BINDING_IDLE_MINUTES = 60;

/**
 * The username a Usage Agreement session carries (in Squid's access.log and to ICAP filters): the Device
 * Group the device is in, so the logs say which network accepted the policy. DeviceGroupStore renames the
 * sessions when their group is renamed.
 */
export const agreementUsername = (groupName: string): string => `agreement:${groupName}`;

/** Minutes as ms; undefined for null (no limit). */
export function minutesToMs(minutes: number | null): number | undefined {
  return minutes === null ? undefined : minutes * MINUTE_MS;
}

/**
 * The start (00:00, server local time) of a YYYY-MM-DD date, as ms since the epoch. On a day whose midnight
 * a daylight-saving change skips, the first instant of that day (JavaScript's Date moves forward).
 * `date` must be a calendar date (isCalendarDate in settings.ts): the settings schema has checked it.
 */
export function localMidnight(date: string): number {
  const [year, month, day] = date.split('-').map(Number) as [number, number, number];
  return new Date(year, month - 1, day).getTime();
}

/**
 * Authentication and Usage Agreement sessions started at `now`: ended by the hard timeout (from sign-in) or
 * the idle timeout (no traffic), whichever comes first; a field is absent when the settings set no limit.
 */
export function portalSessionLimits(
  settings: Pick<PortalSettings, 'idleTimeoutMinutes' | 'hardTimeoutMinutes'>,
  now: number,
): { expiresAt?: number; idleTimeoutMs?: number } {
  const hard = minutesToMs(settings.hardTimeoutMinutes);
  const idle = minutesToMs(settings.idleTimeoutMinutes);
  return {
    ...(hard === undefined ? {} : { expiresAt: now + hard }),
    ...(idle === undefined ? {} : { idleTimeoutMs: idle }),
  };
}

/**
 * When a Device Registration made (or kept) at `now` ends: the start of registrationClearDate; undefined when
 * there is no date, or when the date has passed. A passed date did its work (it cleared the registrations of
 * its day; the settings keep it until the administrator sets another, see clearDateProblem): registrations
 * made after it last until a new date is set, instead of ending the moment they are made.
 */
export function registrationExpiry(
  settings: Pick<PortalSettings, 'registrationClearDate'>,
  now: number,
): number | undefined {
  if (settings.registrationClearDate === null) return undefined;
  const at = localMidnight(settings.registrationClearDate);
  return at > now ? at : undefined;
}

/** A registration's address binding (key kind 'ip'): the idle timeout, 60 minutes when the settings set none. */
export function bindingIdleMs(settings: Pick<PortalSettings, 'idleTimeoutMinutes'>): number {
  return (settings.idleTimeoutMinutes ?? DEFAULT_BINDING_IDLE_MINUTES) * MINUTE_MS;
}

/**
 * What a save of the settings at `now` writes to the sessions still open, as column values (null = no
 * limit): 'portal' and 'agreement' get the new idle limit and created_at + the new hard limit (so a session
 * older than a shortened hard limit ends at once), registrations the new date, their address bindings the
 * date and the binding idle limit. See SessionStore.applyPortalLimits.
 */
export interface SessionLimitUpdate {
  /** For 'portal' and 'agreement': ms, or null. */
  idleTimeoutMs: number | null;
  /** For 'portal' and 'agreement': expires_at = created_at + this, or null. */
  hardTimeoutMs: number | null;
  /** For 'registration' (MAC and IP keys): ms since the epoch, or null. */
  registrationExpiresAt: number | null;
  /** For 'registration' keyed by IP (address bindings): ms. */
  bindingIdleMs: number;
}

export function sessionLimitUpdate(
  settings: Pick<PortalSettings, 'idleTimeoutMinutes' | 'hardTimeoutMinutes' | 'registrationClearDate'>,
  now: number,
): SessionLimitUpdate {
  return {
    idleTimeoutMs: minutesToMs(settings.idleTimeoutMinutes) ?? null,
    hardTimeoutMs: minutesToMs(settings.hardTimeoutMinutes) ?? null,
    registrationExpiresAt: registrationExpiry(settings, now) ?? null,
    bindingIdleMs: bindingIdleMs(settings),
  };
}
