import type { Clock } from '../../clock.ts';
import { sessionLimitUpdate } from '../../portal/session-limits.ts';
import { changedFields, DEFAULT_PORTAL_SETTINGS, type PortalSettings } from '../../portal/settings.ts';
import { DIRECTORY_ROW } from '../directory-apply-rules.ts';
import {
  checkPortalSave,
  patchedPortalSettings,
  portalSettingsOrDefaults,
  storedPortalSettings,
  type PortalSaveResult,
  type PortalSettingsPatch,
} from '../portal-settings-rules.ts';
import type { PortalSettingsRepository } from '../store.ts';
import type { Sql } from './connect.ts';
import { applyPortalLimits } from './portal-limits.ts';
import type { Replica } from './replica.ts';
import {
  parsedSetting,
  readSetting,
  settingsCopy,
  writeSetting,
  type SettingsCopy,
} from './settings-table.ts';
import { writeChanges } from './write.ts';

const ROW = 'portal';

/** A save that found problems: thrown to roll its transaction back (no change number spent), caught below. */
class NotSaved {
  readonly result: PortalSaveResult;
  constructor(result: PortalSaveResult) {
    this.result = result;
  }
}

export interface PgPortalSettingsOptions {
  clock: Clock;
  /** The shortest idle timeout a save may set (config/schema.ts leastIdleSeconds); default 0. */
  leastIdleSeconds?: number;
  /** Whether a directory is applied, for a save; default whether the store holds the directory's row. */
  directoryApplied?: () => boolean;
}

/**
 * The captive portal's settings on PostgreSQL (the PortalSettingsStore of SQLite, shared by every box): the
 * `portal` row of the settings table, read from this process's copy (load() on every request, version() for
 * the ICAP service's ISTag), so a save on one box is in force on all once their copies have caught up.
 *
 * A save takes the settings change number first, reads the settings in force under it (a save of another box
 * in between is not undone), checks, writes, and applies the new limits to the portal's live sessions in the
 * same transaction, under the sessions change number taken after it: no box sees the new settings with the
 * old limits.
 */
export class PgPortalSettings implements PortalSettingsRepository {
  readonly #sql: Sql;
  readonly #replica: Replica;
  readonly #clock: Clock;
  readonly #leastIdleSeconds: number;
  readonly #directoryApplied: (() => boolean) | undefined;
  readonly #settings: SettingsCopy;
  readonly #stored: () => { value: PortalSettings; version: number } | undefined;

  constructor(sql: Sql, replica: Replica, options: PgPortalSettingsOptions) {
    this.#sql = sql;
    this.#replica = replica;
    this.#clock = options.clock;
    this.#leastIdleSeconds = options.leastIdleSeconds ?? 0;
    this.#directoryApplied = options.directoryApplied;
    this.#settings = settingsCopy(replica);
    this.#stored = parsedSetting(this.#settings, ROW, storedPortalSettings);
  }

  /** The settings in force: DEFAULT_PORTAL_SETTINGS (mode off) until some are saved; CONFIG_INVALID if unreadable. */
  load(): PortalSettings {
    return structuredClone(this.#stored()?.value ?? DEFAULT_PORTAL_SETTINGS);
  }

  /** A number that goes up on every save, on whichever box (0: nothing saved yet). */
  version(): number {
    return this.#settings.get(ROW)?.version ?? 0;
  }

  /** Replace the settings with `input` (every field; the settings screen). */
  save(input: unknown): Promise<PortalSaveResult> {
    return this.#write(() => input);
  }

  /** Change some fields (the CLI's `portal set`); the rest as they are in the store when the save runs. */
  update(patch: PortalSettingsPatch): Promise<PortalSaveResult> {
    return this.#write((current) => patchedPortalSettings(current, patch));
  }

  async #write(next: (current: PortalSettings) => unknown): Promise<PortalSaveResult> {
    try {
      return await writeChanges(this.#sql, this.#replica, async (tx, take) => {
        const change = await take('settings');
        const now = this.#clock.now();
        // Stored settings this Doorman cannot read are replaced: the save starts from the defaults.
        const previous = portalSettingsOrDefaults((await readSetting(tx, ROW))?.value);
        const directoryApplied =
          this.#directoryApplied?.() ?? (await readSetting(tx, DIRECTORY_ROW)) !== undefined;
        const checked = checkPortalSave(next(previous), previous, {
          leastIdleSeconds: this.#leastIdleSeconds,
          directoryApplied,
          now,
        });
        if (!checked.ok) throw new NotSaved(checked);
        const { settings } = checked;
        const version = await writeSetting(tx, ROW, settings, { change, now });
        const limits = { change: await take('sessions'), now };
        const sessionsUpdated = await applyPortalLimits(tx, sessionLimitUpdate(settings, now), limits);
        const changed = changedFields(previous, settings);
        return { ok: true, settings, previous, changed, version, sessionsUpdated } as const;
      });
    } catch (error) {
      if (error instanceof NotSaved) return error.result;
      throw error;
    }
  }
}
