import { DoormanError } from '../errors.ts';
import { directoryNeededProblem } from '../portal/directory-needed.ts';
import {
  clearDateProblem,
  DEFAULT_PORTAL_SETTINGS,
  isCalendarDate,
  localDate,
  parsePortalSettings,
  type PortalProblem,
  type PortalSettings,
} from '../portal/settings.ts';

/**
 * What a save of the captive portal's settings checks, whichever engine keeps them
 * (lib/store/portal-settings-store.ts on SQLite, lib/store/postgres/portal-settings.ts on PostgreSQL): the
 * stored settings read back, a patch laid over the settings in force, and every problem of a save. Pure.
 */

/** Some fields of PortalSettings, as an administrator gave them (checked on save); the rest stay as they are. */
export interface PortalSettingsPatch {
  mode?: unknown;
  idleTimeoutMinutes?: unknown;
  hardTimeoutMinutes?: unknown;
  registrationClearDate?: unknown;
  policyText?: unknown;
  walledGarden?: { hosts?: unknown; cidrs?: unknown } | undefined;
}

export type PortalSaveResult =
  | {
      ok: true;
      settings: PortalSettings;
      previous: PortalSettings;
      /** The fields that differ from the previous settings, in PortalSettings order. */
      changed: (keyof PortalSettings)[];
      version: number;
      /** Live portal sessions given the new idle, hard and date limits (SessionStore.applyPortalLimits). */
      sessionsUpdated: number;
    }
  | { ok: false; problems: PortalProblem[] };

/** The stored settings (parsed JSON); CONFIG_INVALID when this Doorman cannot read them. */
export function storedPortalSettings(value: unknown): PortalSettings {
  const checked = parsePortalSettings(value);
  if (!checked.ok) {
    throw new DoormanError(
      'CONFIG_INVALID',
      `the stored portal settings are not valid for this Doorman: ${checked.problems
        .map((p) => `${p.field}: ${p.message}`)
        .join('; ')}; save them again`,
    );
  }
  return checked.settings;
}

/**
 * The settings a save starts from: the stored ones, or the defaults when there are none or they cannot be read
 * (written by another version, or by hand), so the admin screen and `portal set` can mend them.
 */
export function portalSettingsOrDefaults(value: unknown): PortalSettings {
  if (value === undefined) return structuredClone(DEFAULT_PORTAL_SETTINGS);
  const checked = parsePortalSettings(value);
  return checked.ok ? checked.settings : structuredClone(DEFAULT_PORTAL_SETTINGS);
}

/** `object` without its undefined fields: an absent option changes nothing. */
const defined = <T extends object>(object: T): Partial<T> =>
  Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined)) as Partial<T>;

/** `patch` laid over `current` (walled-garden lists one by one). */
export function patchedPortalSettings(current: PortalSettings, patch: PortalSettingsPatch): unknown {
  return {
    ...current,
    ...defined(patch),
    walledGarden: { ...current.walledGarden, ...defined(patch.walledGarden ?? {}) },
  };
}

export interface PortalSaveRules {
  /** The shortest idle timeout a save may set (config/schema.ts leastIdleSeconds). */
  leastIdleSeconds: number;
  /** Whether a directory is applied (the sign-in modes need one). */
  directoryApplied: boolean;
  now: number;
}

/**
 * Every problem of saving `input` over `previous`: the fields, an idle timeout shorter than the configuration
 * lets helpers measure, a clear date set or changed that is not after today (server local time), a sign-in
 * mode without an applied directory. The settings to write when there is none.
 */
export function checkPortalSave(
  input: unknown,
  previous: PortalSettings,
  rules: PortalSaveRules,
): { ok: true; settings: PortalSettings } | { ok: false; problems: PortalProblem[] } {
  const checked = parsePortalSettings(input);
  const problems = checked.ok ? [] : [...checked.problems];
  // Checked even when other fields are wrong, so every problem is listed at once.
  const date = (input as { registrationClearDate?: unknown } | null)?.registrationClearDate;
  const idle = checked.ok ? checked.settings.idleTimeoutMinutes : null;
  if (idle !== null && idle * 60 < rules.leastIdleSeconds) {
    const least = Math.ceil(rules.leastIdleSeconds / 60);
    problems.push({
      field: 'idleTimeoutMinutes',
      message:
        `${idle} is shorter than this configuration allows: at least ${least} minutes (2 × ` +
        `lastSeenFlushSeconds + squid.ttl = ${rules.leastIdleSeconds} seconds, how late a helper may learn ` +
        `of a session's traffic), or none`,
    });
  }
  if (typeof date === 'string' && isCalendarDate(date)) {
    const late = clearDateProblem(date, previous.registrationClearDate, localDate(rules.now));
    if (late !== undefined) problems.push(late);
  }
  // authentication and registration sign users in against the directory: refused while none is applied.
  const noDirectory = checked.ok && directoryNeededProblem(checked.settings.mode, rules.directoryApplied);
  if (noDirectory) problems.push(noDirectory);
  return !checked.ok || problems.length > 0
    ? { ok: false, problems }
    : { ok: true, settings: checked.settings };
}
