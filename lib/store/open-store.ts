import { type Clock, systemClock } from '../clock.ts';
import { type Config, leastIdleSeconds } from '../config/schema.ts';
import { DoormanError } from '../errors.ts';
import type { Db } from './database.ts';
import { directoryPasswordPath } from './directory-settings-store.ts';
import { openSqliteStore } from './sqlite-store.ts';
import type { Store } from './store.ts';

/**
 * The store the configuration names (config.store), for every program that reads or writes what a site's
 * boxes share: the CLI, serve and its ICAP threads. `local` is the box's own session DB in stateDir, opened by
 * the caller as the service user: with `sqlite` the store is on it; whatever the engine, what stays per box
 * (the password-guessing counters, seamless sign-on) stays on it too.
 */
export async function openStore(config: Config, local: Db, options: { clock?: Clock } = {}): Promise<Store> {
  if (config.store.kind === 'postgres') {
    throw new DoormanError('STORE_UNAVAILABLE', 'PostgreSQL store: not in this build yet');
  }
  return openSqliteStore(local, {
    passwordFile: directoryPasswordPath(config),
    clock: options.clock ?? systemClock,
    leastIdleSeconds: leastIdleSeconds(config),
  });
}
