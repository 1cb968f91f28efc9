import type { Clock } from '../clock.ts';
import { changedFields, DEFAULT_PORTAL_SETTINGS, type PortalSettings } from '../portal/settings.ts';
import { sessionLimitUpdate } from '../portal/session-limits.ts';
import { realSchedule, retryWhileBusy, type Schedule } from './busy.ts';
import type { Db } from './database.ts';
import { DIRECTORY_ROW } from './directory-settings-store.ts';
import {
  checkPortalSave,
  patchedPortalSettings,
  portalSettingsOrDefaults,
  storedPortalSettings,
  type PortalSaveResult,
  type PortalSettingsPatch,
} from './portal-settings-rules.ts';
import { SettingsRow } from './settings-row.ts';
import { SessionStore } from './session-store.ts';
import type { SessionSource } from './session.ts';

export type { PortalSaveResult, PortalSettingsPatch } from './portal-settings-rules.ts';

/**
 * The captive portal's settings: one JSON row of the `settings` table (name `portal`). Its `updated_at` is
 * the version: it goes up by at least one on every save, whatever the clock does, so a reader (the ICAP
 * service's ISTag, a helper's cache) notices a change with one indexed read and reloads only then.
 */
const ROW = 'portal';

/** The sessions the portal makes, which Clear current sessions ends (SessionStore.endBySource); API ones stay. */
export const PORTAL_SESSION_SOURCES: readonly SessionSource[] = ['portal', 'registration', 'agreement'];

export class PortalSettingsStore {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #schedule: Schedule;
  readonly #row: SettingsRow;
  readonly #sessions: SessionStore;

  readonly #leastIdleSeconds: number;
  readonly #directoryApplied: () => boolean;

  /**
   * `schedule`: the timers a save waits on while another process holds the lock (tests pass their own).
   * `leastIdleSeconds`: the shortest idle timeout a save may set (config/schema.ts leastIdleSeconds); default 0.
   * `directoryApplied`: whether a directory is applied, read inside the save's transaction; by default
   * whether this DB holds applied directory settings (DirectorySettingsStore's row).
   */
  constructor(
    db: Db,
    options: {
      clock: Clock;
      schedule?: Schedule;
      leastIdleSeconds?: number;
      directoryApplied?: () => boolean;
    },
  ) {
    this.#db = db;
    this.#clock = options.clock;
    this.#leastIdleSeconds = options.leastIdleSeconds ?? 0;
    this.#schedule = options.schedule ?? realSchedule;
    this.#row = new SettingsRow(db, ROW);
    this.#sessions = new SessionStore(db, options.clock);
    const directoryRow = new SettingsRow(db, DIRECTORY_ROW);
    this.#directoryApplied = options.directoryApplied ?? (() => directoryRow.version() > 0);
  }

  /** The settings in force: DEFAULT_PORTAL_SETTINGS (mode off) until some are saved. */
  load(): PortalSettings {
    const row = this.#row.read();
    if (row === undefined) return structuredClone(DEFAULT_PORTAL_SETTINGS);
    return storedPortalSettings(JSON.parse(row.value));
  }

  /** A number that goes up on every save (0: nothing saved yet). One indexed read. */
  version(): number {
    return this.#row.version();
  }

  /** Replace the settings with `input` (every field; the settings screen). See update(). */
  save(input: unknown): Promise<PortalSaveResult> {
    return this.#write(() => input);
  }

  /**
   * Change some fields (the CLI's `portal set`; a field left out or undefined stays as it is): the rest are read under the same write lock, so a save from
   * another process in between is not undone. Every problem is listed; on any, nothing is written. A
   * registrationClearDate set or changed must lie after today (server local time). The authentication and
   * registration modes need an applied directory (lib/portal/directory-needed.ts). A save that changes
   * nothing still counts as a save (the version goes up).
   *
   * Every save also gives the portal's live sessions the limits of the new settings, in the same
   * transaction (SessionStore.applyPortalLimits), so a change of timeouts applies at once to those already
   * signed in, and no reader sees the new settings with the old limits.
   */
  update(patch: PortalSettingsPatch): Promise<PortalSaveResult> {
    return this.#write((current) => patchedPortalSettings(current, patch));
  }

  /**
   * While another process holds the DB's write lock this is tried again on timers (busy.ts), never in a
   * blocking wait; after BUSY_DEADLINE_MS it fails with StoreBusyError. IMMEDIATE: the lock is taken before
   * the settings in force are read.
   */
  #write(next: (current: PortalSettings) => unknown): Promise<PortalSaveResult> {
    const once = this.#db.transaction((): PortalSaveResult => {
      // Stored settings this Doorman cannot read (written by another version, or by hand) are replaced: the
      // save starts from the defaults, so the admin screen and `portal set` can mend them.
      const row = this.#row.read();
      const previous = portalSettingsOrDefaults(row === undefined ? undefined : JSON.parse(row.value));
      const checked = checkPortalSave(next(previous), previous, {
        leastIdleSeconds: this.#leastIdleSeconds,
        directoryApplied: this.#directoryApplied(),
        now: this.#clock.now(),
      });
      if (!checked.ok) return checked;
      const { settings } = checked;
      const now = this.#clock.now();
      const version = this.#row.write(JSON.stringify(settings), now);
      const sessionsUpdated = this.#sessions.applyPortalLimits(sessionLimitUpdate(settings, now));
      return {
        ok: true,
        settings,
        previous,
        changed: changedFields(previous, settings),
        version,
        sessionsUpdated,
      };
    });
    return retryWhileBusy(() => once.immediate(), { clock: this.#clock, schedule: this.#schedule });
  }
}
