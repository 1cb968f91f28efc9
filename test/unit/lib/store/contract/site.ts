import type { AuditRecord } from '../../../../../lib/audit/event.ts';
import type { ManualClock } from '../../../../../lib/clock.ts';
import type { Log } from '../../../../../lib/log.ts';
import type { Store } from '../../../../../lib/store/store.ts';

/**
 * What the store contract suites (one file a repository beside this one) run against: a site of one or more
 * boxes sharing one store, whichever the engine. Each suite is a function taking `OpenSite`; an engine's test
 * files call every suite with its own (test/harness/sqlite-site.ts for SQLite, one file; test/harness/pg-site.ts
 * for PostgreSQL, a file a repository) and add what only that engine has.
 */

/** The repositories the suites exercise. */
export type ContractStore = Pick<
  Store,
  'sessions' | 'apiKeys' | 'admins' | 'deviceGroups' | 'portal' | 'directory' | 'audit'
>;

export interface BoxOptions {
  /** The directory's bind password file of this box (each box has its own). Default: one per box. */
  passwordFile?: string;
  /** PortalSettings: the shortest idle timeout a save may set. */
  leastIdleSeconds?: number;
  /** PortalSettings: whether a directory is applied; default the store's directory row. */
  directoryApplied?: () => boolean;
  /** Admin sign-ins' lifetime. */
  sessionTtlMs?: number;
  /** Where the API keys' "last used" failures go. */
  log?: Log;
  /** The box's name in audit events; default box1, box2... */
  name?: string;
  /** Given the audit events this box committed (the file or syslog sink). */
  ship?: (records: readonly AuditRecord[]) => void;
}

/** One box (a process of its own, as it were) on the site's store; `S`: the repositories a suite needs. */
export interface Box<S extends Partial<ContractStore> = ContractStore> {
  readonly store: S;
  /** Resolves once this box sees every write committed so far, by any box. */
  sync(): Promise<void>;
}

export interface Site<S extends Partial<ContractStore> = ContractStore> {
  /** Every box of the site reads this clock. */
  readonly clock: ManualClock;
  box(options?: BoxOptions): Promise<Box<S>>;
}

/** A fresh, empty site for one test; `now` the clock's start (default 2026-01-01). */
export type OpenSite<S extends Partial<ContractStore> = ContractStore> = (options?: {
  now?: number;
}) => Promise<Site<S>>;
