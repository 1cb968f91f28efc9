import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { Clock } from '../clock.ts';
import type { Config } from '../config/schema.ts';
import type { SettingsTest } from '../directory/directory.ts';
import type { DirectoryError } from '../directory/errors.ts';
import {
  validateDirectorySettings,
  type DirectorySettings,
  type SettingsProblem,
} from '../directory/settings.ts';
import { DoormanError } from '../errors.ts';
import { realSchedule, retryWhileBusy, StoreBusyError, type Schedule } from './busy.ts';
import type { Db } from './database.ts';
import { SettingsRow } from './settings-row.ts';

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
/** Its row of the `settings` table: present once a directory has been applied. */
export const DIRECTORY_ROW = 'directory';
/** Longer than any real password; keeps a pasted file out of a bind request. */
export const MAX_BIND_PASSWORD_LENGTH = 1024;

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

export interface AppliedDirectory {
  settings: DirectorySettings;
  password: string;
  /** Changes on every apply (see version()). */
  version: number;
}

export type ApplyResult =
  | { ok: true; groupCount: number; message: string; settings: DirectorySettings }
  | { ok: false; problems: SettingsProblem[]; message: string }
  | { ok: false; error: DirectoryError; message: string };

export interface ApplyOptions {
  /** Connect, bind and count groups with the new values (directory.ts's testSettings, or a fake in tests). */
  test: (settings: DirectorySettings, password: string) => Promise<SettingsTest>;
}

export class DirectorySettingsStore {
  readonly #db: Db;
  readonly #passwordFile: string;
  readonly #clock: Clock;
  readonly #schedule: Schedule;
  readonly #row: SettingsRow;

  /** `schedule`: the timers a write waits on while another process holds the lock (tests pass their own). */
  constructor(db: Db, options: { passwordFile: string; clock: Clock; schedule?: Schedule }) {
    this.#db = db;
    this.#passwordFile = options.passwordFile;
    this.#clock = options.clock;
    this.#schedule = options.schedule ?? realSchedule;
    this.#row = new SettingsRow(db, DIRECTORY_ROW);
  }

  /** The settings in force and the bind password; undefined when no directory was ever applied. */
  load(): AppliedDirectory | undefined {
    const row = this.#row.read();
    if (row === undefined) return undefined;
    const checked = validateDirectorySettings(JSON.parse(row.value));
    if (!checked.ok) {
      throw new DoormanError(
        'CONFIG_INVALID',
        `the stored directory settings are not valid for this Doorman: ${checked.problems
          .map((p) => `${p.field}: ${p.message}`)
          .join('; ')}; apply them again`,
      );
    }
    const password = this.#readPassword();
    if (password === undefined) {
      throw new DoormanError(
        'STORE_UNAVAILABLE',
        `directory settings are applied but the bind password file ${this.#passwordFile} is missing: apply them again with the password`,
      );
    }
    return { settings: checked.settings, password, version: row.version };
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
  async apply(input: unknown, password: string | undefined, options: ApplyOptions): Promise<ApplyResult> {
    const checked = validateDirectorySettings(input);
    const problems = checked.ok ? [] : [...checked.problems];
    let secret = password;
    if (secret === undefined) {
      secret = this.#readPassword();
      if (secret === undefined) problems.push({ field: 'password', message: 'is required' });
      else if (checked.ok && this.#sendsPasswordElsewhere(checked.settings)) {
        // Otherwise anyone at the settings screen could send the stored password to a server of theirs.
        problems.push({
          field: 'password',
          message: 'is required again when the server, port, transport, CA or bind account changes',
        });
      }
    } else if (secret.length === 0) {
      problems.push({
        field: 'password',
        message: 'must not be empty (an empty password binds anonymously)',
      });
    } else if (secret.length > MAX_BIND_PASSWORD_LENGTH) {
      problems.push({ field: 'password', message: `is longer than ${MAX_BIND_PASSWORD_LENGTH} characters` });
    } else if (/[\r\n\0]/.test(secret)) {
      problems.push({ field: 'password', message: 'must not contain line breaks or NUL characters' });
    }
    if (!checked.ok || secret === undefined || problems.length > 0) {
      return {
        ok: false,
        problems,
        message: problems.map((p) => `${p.field}: ${p.message}`).join('\n'),
      };
    }
    const settings = checked.settings;
    const tested = await options.test(settings, secret);
    if (!tested.ok) return { ok: false, error: tested.error, message: tested.error.message };
    await this.#write(settings, password);
    const n = tested.groupCount;
    return { ok: true, groupCount: n, message: `Found ${n} user group${n === 1 ? '' : 's'}`, settings };
  }

  /** Whether `next` would send the stored bind password somewhere, or as someone, it was not sent before. */
  #sendsPasswordElsewhere(next: DirectorySettings): boolean {
    const row = this.#row.read();
    if (row === undefined) return true;
    const current = JSON.parse(row.value) as Partial<DirectorySettings>;
    const keys = ['kind', 'host', 'address', 'port', 'transport', 'caCertificate', 'bindDn'] as const;
    return keys.some((key) => current[key] !== next[key]);
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
    let temp: string | undefined;
    let previous: string | undefined;
    let renamed = false;
    try {
      this.#row.write(JSON.stringify(settings), this.#clock.now());
      if (password !== undefined) {
        previous = this.#readPassword();
        temp = this.#writeTemp(password);
        renameSync(temp, this.#passwordFile);
        renamed = true;
      }
      this.#db.exec('COMMIT');
    } catch (error) {
      if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
      if (temp !== undefined && !renamed) rmSync(temp, { force: true });
      if (renamed) {
        if (previous === undefined) rmSync(this.#passwordFile, { force: true });
        else renameSync(this.#writeTemp(previous), this.#passwordFile);
      }
      throw error;
    }
  }

  /** A new file next to the password file, mode 0600, holding `password` and flushed to disk. */
  #writeTemp(password: string): string {
    const temp = `${this.#passwordFile}.${randomBytes(6).toString('hex')}.tmp`;
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeSync(fd, password);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    return temp;
  }

  /** The stored password (one trailing line break, as an editor adds, dropped); undefined when there is none. */
  #readPassword(): string | undefined {
    try {
      return readFileSync(this.#passwordFile, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new DoormanError(
        'STORE_UNAVAILABLE',
        `cannot read the bind password file ${this.#passwordFile}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      );
    }
  }
}
