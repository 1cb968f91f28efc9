import { SEE_AUTHD_LOG } from './log-hint.ts';
import { systemClock } from '../../lib/clock.ts';
import { dbPath } from '../../lib/config/load.ts';
import type { Config } from '../../lib/config/schema.ts';
import type { Directory } from '../../lib/directory/directory.ts';
import { bh, type HelperReply, type HelperRequest } from '../../lib/helper-protocol/message.ts';
import type { HelperHandlers } from '../../lib/helper-protocol/run.ts';
import type { Log } from '../../lib/log.ts';
import { PasswordGuesses } from '../../lib/security/password-guesses.ts';
import { unlessBusy } from '../../lib/store/busy.ts';
import { openDatabase } from '../../lib/store/database.ts';
import { DirectorySettingsStore, directoryPasswordPath } from '../../lib/store/directory-settings-store.ts';
import { SignInFailureStore } from '../../lib/store/sign-in-failure-store.ts';
import type { DirectorySettingsRepository } from '../../lib/store/store.ts';
import { DirectoryRuntime } from '../directory-runtime.ts';
import { Reopening } from '../reopening.ts';

/** What a check may need besides the directory: the shared limits on password guessing, the log. */
export interface CheckContext {
  guesses: PasswordGuesses;
  log: Log;
}

/** Basic authentication or a group check against the directory in force (undefined: none applied). */
export type DirectoryCheck = (
  directory: Directory | undefined,
  request: HelperRequest,
  context: CheckContext,
) => Promise<HelperReply>;

export interface DirectoryService {
  /** runHelper's handlers for one kind of check; every kind shares this service's directory and its pools. */
  handlers(check: DirectoryCheck): HelperHandlers;
  close(): Promise<void>;
}

/**
 * The directory the helpers answer from: the settings in the session DB (re-read when Save & apply changes
 * them, see DirectoryRuntime), for the direct helpers (helpers/directory-helper.ts) and authd alike. authd
 * makes one for Basic and groups together: one set of LDAP connections, one password and group cache.
 *
 * `config` is called inside, so a broken configuration is answered with BH and retried, not an exit.
 */
export function createDirectoryService(options: {
  config: () => Config;
  log: Log;
  /** The directory's settings from the shared PostgreSQL store; default the session DB's (SQLite). */
  settings?: Pick<DirectorySettingsRepository, 'load' | 'version'>;
}): DirectoryService {
  const { log } = options;
  const runtime = new Reopening(
    'directory settings',
    () => {
      const config = options.config();
      // Never wait for a lock: it would hold every answer (see lib/store/busy.ts).
      const db = openDatabase(dbPath(config), { mustExist: true, busyTimeoutMs: 0 });
      const store =
        options.settings ??
        new DirectorySettingsStore(db, { passwordFile: directoryPasswordPath(config), clock: systemClock });
      return {
        runtime: new DirectoryRuntime(store, { clock: systemClock, log, closed: () => db.close() }),
        // In the same DB as the splash page's, so that both ways in share one limit.
        guesses: new PasswordGuesses(new SignInFailureStore(db), config.passwordGuessing, {
          clock: systemClock,
        }),
      };
    },
    log,
    (dropped) => void dropped.runtime.close(),
  );
  return {
    handlers: (check) => ({
      // A read that meets SQLITE_BUSY (rare in WAL): keep the settings in force, look again at the next batch.
      beforeBatch: () => runtime.use(({ runtime: r }) => void unlessBusy(() => r.refresh())),
      handle: (request) => {
        const current = runtime.get();
        return current === undefined
          ? bh(`settings unavailable, ${SEE_AUTHD_LOG}`)
          : check(current.runtime.current, request, { guesses: current.guesses, log });
      },
    }),
    close: async () => {
      await runtime.get()?.runtime.close();
    },
  };
}
