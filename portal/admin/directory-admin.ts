import type { DirectorySettings } from '../../lib/directory/settings.ts';
import type { ApplyOptions } from '../../lib/store/directory-settings-store.ts';
import type { DirectorySettingsRepository } from '../../lib/store/store.ts';

/** A field of the settings form that cannot be accepted, in words; `field` is the settings key (`port`). */
export interface FieldProblem {
  field: string;
  message: string;
}

/** What Save & apply did: applied (and found this many groups), or nothing changed and why. */
export type ApplyResult =
  | { ok: true; groupCount: number; message: string }
  | { ok: false; problems?: FieldProblem[]; error?: { code: string; message: string } };

/**
 * What the admin screens need of the directory settings, and no more: in particular, never the bind password
 * itself, only whether one is stored. The real implementation is the store's directory settings (see
 * directoryAdminFrom); tests use a fake.
 */
export interface DirectoryAdmin {
  /**
   * The settings in force, or undefined before the first successful apply. May throw a DoormanError when the
   * stored settings cannot be read (the page then says so and offers an empty form to apply them again).
   */
  current(): { settings: DirectorySettings; hasPassword: boolean } | undefined;
  /**
   * Validate `input`, connect, bind, count the user groups; keep it only if all of that worked. `password`
   * undefined keeps the stored password. On failure nothing changes.
   */
  apply(input: unknown, password: string | undefined): Promise<ApplyResult>;
}

/**
 * The admin screens' view of the directory settings store: the password does not leave it, and apply() tests
 * the new values with `options.test` (directory.ts's testSettings in production).
 */
export function directoryAdminFrom(
  store: Pick<DirectorySettingsRepository, 'load' | 'apply'>,
  options: ApplyOptions,
): DirectoryAdmin {
  return {
    current() {
      const loaded = store.load();
      return loaded === undefined
        ? undefined
        : { settings: loaded.settings, hasPassword: loaded.password !== '' };
    },
    apply: (input, password) => store.apply(input, password, options),
  };
}
