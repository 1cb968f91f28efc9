import type { Clock } from '../../clock.ts';
import type { DirectorySettings } from '../../directory/settings.ts';
import { DoormanError } from '../../errors.ts';
import { BindPasswordFile } from '../bind-password-file.ts';
import {
  applyDirectory,
  bindPasswordAppliedElsewhere,
  bindPasswordTarget,
  DIRECTORY_ROW,
  missingBindPassword,
  sendsPasswordElsewhere,
  storedDirectorySettings,
  type AppliedDirectory,
  type ApplyOptions,
  type ApplyResult,
} from '../directory-apply-rules.ts';
import type { DirectorySettingsRepository } from '../store.ts';
import type { Sql } from './connect.ts';
import type { Replica } from './replica.ts';
import { parsedSetting, settingsCopy, writeSetting, type SettingsCopy } from './settings-table.ts';
import { writeTable } from './write.ts';

/**
 * The directory settings on PostgreSQL (the DirectorySettingsStore of SQLite): the settings are shared by
 * every box (the `directory` row of the settings table, read from this process's copy); the bind password is
 * not: it stays a file of each box's own (BindPasswordFile), never in the store. A box that has the settings
 * but not yet a password of its own says so on load() (apply them there with the password).
 *
 * Nor is the rule "a new server or account needs the password again" only the saving box's: each box's
 * password goes only where it was applied for on that box (the record beside its file). Otherwise an admin of
 * any box could save a server of theirs with a password of theirs, and every other box would send it its own.
 * So load() refuses settings whose target is not the record's, and a save that keeps this box's password is
 * judged against the record, not against the row (which another box may have saved).
 *
 * Save & apply validates, tests the new values against the directory, and only when that works writes the row
 * and, in the same transaction's span, this box's password file; the old file is put back if the commit
 * fails. A bad save changes nothing and the previous settings stay in force on every box.
 */
export class PgDirectorySettings implements DirectorySettingsRepository {
  readonly #sql: Sql;
  readonly #replica: Replica;
  readonly #clock: Clock;
  readonly #passwordFile: BindPasswordFile;
  readonly #settings: SettingsCopy;
  readonly #stored: () => { value: DirectorySettings; version: number } | undefined;

  constructor(sql: Sql, replica: Replica, options: { passwordFile: string; clock: Clock }) {
    this.#sql = sql;
    this.#replica = replica;
    this.#clock = options.clock;
    this.#passwordFile = new BindPasswordFile(options.passwordFile);
    this.#settings = settingsCopy(replica);
    this.#stored = parsedSetting(this.#settings, DIRECTORY_ROW, storedDirectorySettings);
  }

  /** The settings in force and this box's bind password; undefined when no directory was ever applied. */
  load(): AppliedDirectory | undefined {
    const stored = this.#stored();
    if (stored === undefined) return undefined;
    const password = this.#passwordFile.read();
    if (password === undefined) throw missingBindPassword(this.#passwordFile.path);
    if (sendsPasswordElsewhere(this.#passwordFile.appliedFor(), stored.value))
      throw bindPasswordAppliedElsewhere(this.#passwordFile.path);
    return { settings: structuredClone(stored.value), password, version: stored.version };
  }

  /** A number that changes whenever settings are applied, on whichever box (0: none ever were). */
  version(): number {
    return this.#settings.get(DIRECTORY_ROW)?.version ?? 0;
  }

  /**
   * Save & apply: check every field (all problems listed), test the new values against the directory, and
   * only if that succeeds write the settings (for every box) and the password (this box's). `password`
   * undefined keeps this box's stored one, for the server and account it was applied for on this box only.
   */
  apply(input: unknown, password: string | undefined, options: ApplyOptions): Promise<ApplyResult> {
    return applyDirectory(input, password, options, {
      storedPassword: () => this.#passwordFile.read(),
      storedSettings: () => this.#passwordFile.appliedFor(),
      write: (settings, newPassword) => this.#write(settings, newPassword),
    });
  }

  /** The row and the password file together: the file is put back as it was if the transaction fails. */
  async #write(settings: DirectorySettings, password: string | undefined): Promise<void> {
    let undo: (() => void) | undefined;
    try {
      await writeTable(this.#sql, this.#replica, 'settings', async (tx, change) => {
        // Run again after a deadlock (write.ts): what a try before did to the file is undone first.
        undo?.();
        undo = undefined;
        await writeSetting(tx, DIRECTORY_ROW, settings, { change, now: this.#clock.now() });
        if (password !== undefined) undo = this.#passwordFile.replace(password, bindPasswordTarget(settings));
      });
    } catch (error) {
      undo?.();
      if (error instanceof DoormanError && error.code === 'STORE_UNAVAILABLE') throw error;
      throw new DoormanError(
        'STORE_UNAVAILABLE',
        `cannot save the directory settings: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }
}
