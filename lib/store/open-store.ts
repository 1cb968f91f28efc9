import { hostname } from 'node:os';
import { type Clock, systemClock } from '../clock.ts';
import { type Config, leastIdleSeconds } from '../config/schema.ts';
import type { Log } from '../log.ts';
import type { Db } from './database.ts';
import { directoryPasswordPath } from './directory-settings-store.ts';
import { openPostgresStore } from './postgres/store.ts';
import { openSqliteStore } from './sqlite-store.ts';
import type { AuditOptions, Store } from './store.ts';

export interface OpenStoreOptions {
  clock?: Clock;
  /** Which program this is, for PostgreSQL's pg_stat_activity (doorman-serve, doorman-cli...). */
  applicationName?: string;
  /** Where a PostgreSQL store logs (its replica's staleness, notices); default stderr. */
  log?: Log;
  /** Where committed audit events are shipped (lib/audit/sink.ts); the box is config.audit.box. */
  ship?: AuditOptions['ship'];
}

/** This box's name in audit events: config audit.box, or the host name. */
export const auditBox = (config: Config): string => config.audit.box ?? hostname();

/**
 * The store the configuration names (config.store), for every program that reads or writes what a site's
 * boxes share: the CLI, serve and its ICAP threads. `local` is the box's own session DB in stateDir, opened by
 * the caller as the service user: with `sqlite` the store is on it; whatever the engine, what stays per box
 * (the password-guessing counters, seamless sign-on) stays on it too. A PostgreSQL store is migrated and loaded
 * before it is returned (it rejects with STORE_UNAVAILABLE while PostgreSQL cannot be reached).
 */
export async function openStore(config: Config, local: Db, options: OpenStoreOptions = {}): Promise<Store> {
  const { store } = config;
  const audit = { box: auditBox(config), ...(options.ship === undefined ? {} : { ship: options.ship }) };
  if (store.kind === 'postgres') {
    return openPostgresStore(store, {
      applicationName: options.applicationName ?? 'doorman',
      log: options.log ?? ((line) => void process.stderr.write(`${line}\n`)),
      clock: options.clock ?? systemClock,
      passwordFile: directoryPasswordPath(config),
      leastIdleSeconds: leastIdleSeconds(config),
      migrate: true,
      audit,
    });
  }
  return openSqliteStore(local, {
    passwordFile: directoryPasswordPath(config),
    clock: options.clock ?? systemClock,
    leastIdleSeconds: leastIdleSeconds(config),
    audit,
    ...(options.log === undefined ? {} : { log: options.log }),
  });
}
