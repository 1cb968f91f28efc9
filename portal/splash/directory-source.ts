import type { Clock } from '../../lib/clock.ts';
import { Directory } from '../../lib/directory/directory.ts';
import type { PasswordCheck } from '../../lib/directory/password-check.ts';
import { RetiredDirectories } from '../../lib/directory/retired.ts';
import { DoormanError } from '../../lib/errors.ts';
import type { Log } from '../../lib/log.ts';
import type { DirectorySettingsRepository } from '../../lib/store/store.ts';

/** What the splash page needs of the directory: a password check, and a version that moves on every apply. */
export interface PasswordDirectory {
  /** The applied settings' version: remembered failures are for one version only. */
  version: number;
  checkPassword(login: string, password: string): Promise<PasswordCheck>;
}

export interface DirectorySource {
  /**
   * The directory in force, or undefined when none was ever applied. May throw a DoormanError when the stored
   * settings cannot be read (the page then says the directory cannot be asked).
   */
  current(): PasswordDirectory | undefined;
}

/**
 * The applied directory, as the helpers get it (helpers/directory-runtime.ts): one indexed read per sign-in,
 * and a new Directory only when Save & apply has moved the version, so a change applies without a restart.
 * The previous one is closed once the checks already sent to it could have finished. close() (serve's
 * shutdown) closes the one in force and any previous one still waiting: their pooled connections would keep
 * the process alive.
 */
export function directorySourceFrom(
  store: Pick<DirectorySettingsRepository, 'load' | 'version'>,
  options: { clock: Clock; log: Log },
): DirectorySource & { close(): Promise<void> } {
  let held: { version: number; directory: Directory | undefined } | undefined;
  const retired = new RetiredDirectories();
  let closed = false;
  return {
    current() {
      // After close() a late request must not open connections that nothing would close.
      if (closed) throw new DoormanError('STORE_UNAVAILABLE', 'Doorman is stopping');
      const version = store.version();
      if (held?.version !== version) {
        const loaded = version === 0 ? undefined : store.load();
        const previous = held?.directory;
        held = {
          version,
          directory:
            loaded &&
            new Directory(loaded.settings, loaded.password, { clock: options.clock, log: options.log }),
        };
        if (previous !== undefined) retired.retire(previous);
      }
      const directory = held.directory;
      return directory && { version, checkPassword: (l, p) => directory.checkPassword(l, p) };
    },
    close: async () => {
      closed = true;
      await Promise.all([held?.directory?.close(), retired.close()]);
    },
  };
}
