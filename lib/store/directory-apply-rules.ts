import type { SettingsTest } from '../directory/directory.ts';
import type { DirectoryError } from '../directory/errors.ts';
import {
  validateDirectorySettings,
  type DirectorySettings,
  type SettingsProblem,
} from '../directory/settings.ts';
import { DoormanError } from '../errors.ts';

/**
 * What Save & apply of the directory settings checks, whichever engine holds them
 * (lib/store/directory-settings-store.ts on SQLite, lib/store/postgres/directory-settings.ts on PostgreSQL):
 * every field, the bind password given or kept, and the stored settings read back; and the order of Save &
 * apply over an engine's reads and write (applyDirectory).
 */

/** The settings table's row of the directory: present once a directory has been applied. */
export const DIRECTORY_ROW = 'directory';
/** Longer than any real password; keeps a pasted file out of a bind request. */
export const MAX_BIND_PASSWORD_LENGTH = 1024;

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

/** The stored settings (parsed JSON); CONFIG_INVALID when this Doorman cannot read them. */
export function storedDirectorySettings(value: unknown): DirectorySettings {
  const checked = validateDirectorySettings(value);
  if (!checked.ok) {
    throw new DoormanError(
      'CONFIG_INVALID',
      `the stored directory settings are not valid for this Doorman: ${checked.problems
        .map((p) => `${p.field}: ${p.message}`)
        .join('; ')}; apply them again`,
    );
  }
  return checked.settings;
}

export const missingBindPassword = (path: string): DoormanError =>
  new DoormanError(
    'STORE_UNAVAILABLE',
    `directory settings are applied but the bind password file ${path} is missing: apply them again with the password`,
  );

/**
 * The settings in force send the password somewhere it was not applied for on this box: saved on another
 * box, for another server or account, with that box's password (PostgreSQL: the row is shared, the file not).
 */
export const bindPasswordAppliedElsewhere = (path: string): DoormanError =>
  new DoormanError(
    'STORE_UNAVAILABLE',
    `directory settings are applied for another server or bind account than the bind password file ${path} was: apply them again on this box with the password`,
  );

/** What decides where the bind password goes, and as whom: what it must be given again for when it changes. */
const TARGET_KEYS = ['kind', 'host', 'address', 'port', 'transport', 'caCertificate', 'bindDn'] as const;
export type BindPasswordTarget = Pick<DirectorySettings, (typeof TARGET_KEYS)[number]>;

/** Where, and as whom, `settings` send the bind password: recorded beside it when it is written. */
export function bindPasswordTarget(settings: DirectorySettings): BindPasswordTarget {
  const target: Partial<Record<(typeof TARGET_KEYS)[number], unknown>> = {};
  for (const key of TARGET_KEYS) if (settings[key] !== undefined) target[key] = settings[key];
  return target as BindPasswordTarget;
}

/**
 * Every problem of applying `input` with `password` (undefined: keep the stored one, `stored.password`). The
 * stored password is kept only for the server and account it was sent to before (`stored.settings`: what it
 * was applied with): otherwise anyone at the settings screen could send it to a server of theirs.
 */
export function checkDirectoryApply(
  input: unknown,
  password: string | undefined,
  stored: { password: string | undefined; settings: unknown },
):
  | { ok: true; settings: DirectorySettings; secret: string }
  | { ok: false; problems: SettingsProblem[]; message: string } {
  const checked = validateDirectorySettings(input);
  const problems = checked.ok ? [] : [...checked.problems];
  let secret = password;
  if (secret === undefined) {
    secret = stored.password;
    if (secret === undefined) problems.push({ field: 'password', message: 'is required' });
    else if (checked.ok && sendsPasswordElsewhere(stored.settings, checked.settings)) {
      problems.push({
        field: 'password',
        message: 'is required again when the server, port, transport, CA or bind account changes',
      });
    }
  } else if (secret.length === 0) {
    problems.push({ field: 'password', message: 'must not be empty (an empty password binds anonymously)' });
  } else if (secret.length > MAX_BIND_PASSWORD_LENGTH) {
    problems.push({ field: 'password', message: `is longer than ${MAX_BIND_PASSWORD_LENGTH} characters` });
  } else if (/[\r\n\0]/.test(secret)) {
    problems.push({ field: 'password', message: 'must not contain line breaks or NUL characters' });
  }
  if (!checked.ok || secret === undefined || problems.length > 0)
    return { ok: false, problems, message: problems.map((p) => `${p.field}: ${p.message}`).join('\n') };
  return { ok: true, settings: checked.settings, secret };
}

/**
 * Whether `next` would send the stored bind password somewhere, or as someone, it was not sent before
 * (`current`: the settings it was sent with, or what was recorded beside it; anything unreadable counts as
 * somewhere else).
 */
export function sendsPasswordElsewhere(current: unknown, next: BindPasswordTarget): boolean {
  if (current === undefined || current === null || typeof current !== 'object') return true;
  const was = current as Partial<BindPasswordTarget>;
  return TARGET_KEYS.some((key) => was[key] !== next[key]);
}

export interface ApplyOptions {
  /** Connect, bind and count groups with the new values (directory.ts's testSettings, or a fake in tests). */
  test: (settings: DirectorySettings, password: string) => Promise<SettingsTest>;
}

/** What an engine gives Save & apply: this box's stored password, the settings in force, and the write. */
export interface DirectoryApplyStore {
  storedPassword(): string | undefined;
  /**
   * What the stored password was applied with (parsed JSON), undefined when nothing was: the settings in
   * force on SQLite (one box, written together); on PostgreSQL what this box's password file was applied for
   * (the settings row is shared, and may have been saved on another box with that box's password).
   */
  storedSettings(): unknown;
  /** Settings and, when given, this box's password, together; nothing written if it fails. */
  write(settings: DirectorySettings, password: string | undefined): Promise<void>;
}

/**
 * Save & apply: check every field of `input` (all problems listed), test the new values against the
 * directory, and only if that succeeds write settings and password. `password` undefined keeps the stored one.
 * On any failure nothing is written.
 */
export async function applyDirectory(
  input: unknown,
  password: string | undefined,
  options: ApplyOptions,
  store: DirectoryApplyStore,
): Promise<ApplyResult> {
  const checked = checkDirectoryApply(input, password, {
    password: password === undefined ? store.storedPassword() : undefined,
    settings: store.storedSettings(),
  });
  if (!checked.ok) return checked;
  const { settings, secret } = checked;
  const tested = await options.test(settings, secret);
  if (!tested.ok) return { ok: false, error: tested.error, message: tested.error.message };
  await store.write(settings, password);
  const n = tested.groupCount;
  return { ok: true, groupCount: n, message: `Found ${n} user group${n === 1 ? '' : 's'}`, settings };
}
