import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import type { DirectorySettings } from '../directory/settings.ts';
import { DoormanError } from '../errors.ts';
import { BindPasswordFile } from './bind-password-file.ts';
import { realSchedule, retryWhileBusy, StoreBusyError, type Schedule } from './busy.ts';
import type { Db } from './database.ts';
import {
  applyDirectory,
  bindPasswordTarget,
  DIRECTORY_ROW,
  missingBindPassword,
  storedDirectorySettings,
  type AppliedDirectory,
  type ApplyOptions,
  type ApplyResult,
} from './directory-apply-rules.ts';
import { SettingsRow } from './settings-row.ts';

export {
  DIRECTORY_ROW,
  MAX_BIND_PASSWORD_LENGTH,
  type AppliedDirectory,
  type ApplyOptions,
  type ApplyResult,
} from './directory-apply-rules.ts';

/**
 * The directory settings in force: the settings as JSON in the `settings` table (row `directory`), and the
 * bind account's password in a file of its own, `<stateDir>/directory-bind-password`, mode 0600, owned by
 * the service user (whom Squid's helpers run as). The password is stored in clear text because it must be
 * sent to the directory as it is; the file is the one place it exists: never in the DB, a process argument,
 * a log line, an error message or a page.
 *
 * Save & apply (apply) validates the new settings, tests them against the directory, and only when that
 * works writes them: a bad save changes nothing and the previous settings stay in force.
 */
export const DIRECTORY_PASSWORD_FILE = 'directory-bind-password';

export function directoryPasswordPath(config: Config): string {
  return join(config.stateDir, DIRECTORY_PASSWORD_FILE);
}

/**
 * Whether a directory has been applied, without opening the DB: the password file is written by a successful
 * Save & apply only. For `doorman squid-conf`, which runs as root and must not create root-owned DB files.
 */
export function directoryApplied(config: Config): boolean {
  return existsSync(directoryPasswordPath(config));
}

export class DirectorySettingsStore {
  readonly #db: Db;
  readonly #passwordFile: BindPasswordFile;
  readonly #clock: Clock;
  readonly #schedule: Schedule;
  readonly #row: SettingsRow;

  /** `schedule`: the timers a write waits on while another process holds the lock (tests pass their own). */
  constructor(db: Db, options: { passwordFile: string; clock: Clock; schedule?: Schedule }) {
    this.#db = db;
    this.#passwordFile = new BindPasswordFile(options.passwordFile);
    this.#clock = options.clock;
    this.#schedule = options.schedule ?? realSchedule;
    this.#row = new SettingsRow(db, DIRECTORY_ROW);
  }

  /** The settings in force and the bind password; undefined when no directory was ever applied. */
  load(): AppliedDirectory | undefined {
    const row = this.#row.read();
    if (row === undefined) return undefined;
    const settings = storedDirectorySettings(JSON.parse(row.value));
    const password = this.#passwordFile.read();
    if (password === undefined) throw missingBindPassword(this.#passwordFile.path);
    return { settings, password, version: row.version };
  }

  /**
   * A number that changes whenever settings are applied (0: none ever were). One indexed read: a helper
   * calls it per batch of requests and reloads only when it moved.
   */
  version(): number {
    return this.#row.version();
  }

  /**
   * Save & apply: check every field of `input` (all problems listed), test the new values against the
   * directory, and only if that succeeds write settings and password. `password` undefined keeps the stored
   * one. On any failure nothing is written.
   */
  apply(input: unknown, password: string | undefined, options: ApplyOptions): Promise<ApplyResult> {
    return applyDirectory(input, password, options, {
      storedPassword: () => this.#passwordFile.read(),
      storedSettings: () => {
        const row = this.#row.read();
        return row === undefined ? undefined : JSON.parse(row.value);
      },
      write: (settings, newPassword) => this.#write(settings, newPassword),
    });
  }

  /**
   * Settings row and password file, together: the new password goes to a temporary file (0600) first, is
   * renamed over the old one inside the DB transaction, and the old one is put back if the commit fails.
   * While another process holds the DB's write lock this is tried again on timers (busy.ts), never in a
   * blocking wait; the lock is taken first, so a try that meets it has written nothing. After
   * BUSY_DEADLINE_MS it fails with StoreBusyError (the admin screen's 503).
   */
  async #write(settings: DirectorySettings, password: string | undefined): Promise<void> {
    try {
      await retryWhileBusy(() => this.#writeOnce(settings, password), {
        clock: this.#clock,
        schedule: this.#schedule,
      });
    } catch (error) {
      if (error instanceof StoreBusyError) throw error;
      throw new DoormanError(
        'STORE_UNAVAILABLE',
        `cannot save the directory settings: ${(error as Error).message}`,
        {
          cause: error,
        },
      );
    }
  }

  #writeOnce(settings: DirectorySettings, password: string | undefined): void {
    this.#db.exec('BEGIN IMMEDIATE');
    let undo: (() => void) | undefined;
    try {
      this.#row.write(JSON.stringify(settings), this.#clock.now());
      // What it is for is recorded too (unread here: one box writes both): a box grown to PostgreSQL keeps it.
      if (password !== undefined) undo = this.#passwordFile.replace(password, bindPasswordTarget(settings));
      this.#db.exec('COMMIT');
    } catch (error) {
      if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
      undo?.();
      throw error;
    }
  }
}
