import { type Clock, systemClock } from '../clock.ts';
import { dbPath } from '../config/load.ts';
import type { Config } from '../config/schema.ts';
import { type Db, openDatabase } from '../store/database.ts';
import {
  type AppliedDirectory,
  DirectorySettingsStore,
  directoryPasswordPath,
} from '../store/directory-settings-store.ts';
import { NtlmClientStore } from '../store/ntlm-client-store.ts';
import { SeamlessSettingsStore } from '../store/seamless-settings-store.ts';
import { lookupUser, prepareStateDir } from '../system/service-user.ts';
import type { SeamlessStoreAccess } from './control.ts';

/**
 * The session DB for a process that must stay root (the `doorman seamless` CLI, serve's privileged child): the
 * join, winbindd and the keytab's owner need root, but every file the DB creates (the DB, -wal, -shm) must
 * belong to the service user, or the helpers lose access (service-user.ts). So the DB is opened and used with
 * the *effective* uid and gid of the service user (seteuid/setegid, back to root after each call): better-sqlite3
 * is synchronous, so nothing else runs in between. Not root: plain calls.
 *
 * glibc applies seteuid to every thread of the process, libuv's pool included: callers make these calls while
 * no asynchronous file work of theirs is in flight (the CLI and the privileged child run one step at a time).
 */
export interface RootStores {
  seamless: Required<SeamlessStoreAccess> & { version(): number };
  directory(): AppliedDirectory | undefined;
  close(): void;
}

export function openStoresKeepingRoot(config: Config, clock: Clock = systemClock): RootStores {
  const root = process.getuid?.() === 0;
  let as = <T>(work: () => T): T => work();
  if (root) {
    const account = lookupUser(config.serviceUser);
    // As `doorman serve` would leave it (service-user.ts dropPrivileges): made if missing, the service user's.
    prepareStateDir(config.stateDir, account);
    as = <T>(work: () => T): T => {
      const mask = process.umask(0o077);
      process.setegid?.(account.gid);
      process.seteuid?.(account.uid);
      try {
        return work();
      } finally {
        process.seteuid?.(0);
        process.setegid?.(0);
        process.umask(mask);
      }
    };
  }
  const db: Db = as(() => openDatabase(dbPath(config)));
  const seamless = new SeamlessSettingsStore(db, { clock });
  const ntlmClients = new NtlmClientStore(db);
  const directory = new DirectorySettingsStore(db, { passwordFile: directoryPasswordPath(config), clock });
  return {
    seamless: {
      current: () => as(() => seamless.current()),
      save: (state) => as(() => seamless.save(state)),
      clear: () => as(() => seamless.clear()),
      version: () => as(() => seamless.version()),
      ntlmClients: (since, limit) => as(() => ntlmClients.seenSince(since, limit)),
    },
    directory: () => as(() => directory.load()),
    close: () => as(() => db.close()),
  };
}
