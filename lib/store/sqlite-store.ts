import { hostname } from 'node:os';
import { auditRecords, withGroup } from '../audit/event.ts';
import { expiryEvents } from '../audit/expiry.ts';
import { type Clock, systemClock } from '../clock.ts';
import { DoormanError } from '../errors.ts';
import type { Log } from '../log.ts';
import { addressBinding } from '../portal/address-binding.ts';
import { agreementSession } from '../portal/portal-sessions.ts';
import { AdminStore } from './admin-store.ts';
import { ApiKeyStore } from './api-key-store.ts';
import { AuditJournal } from './audit-journal.ts';
import { AuditStore, shipper } from './audit-store.ts';
import type { Schedule } from './busy.ts';
import type { Db } from './database.ts';
import { DeviceGroupStore } from './device-group-store.ts';
import { DirectorySettingsStore } from './directory-settings-store.ts';
import { type Commits, GroupCommit } from './group-commit.ts';
import { PortalSettingsStore } from './portal-settings-store.ts';
import { SessionStore } from './session-store.ts';
import { idleGraceMs } from './session.ts';
import type {
  AdminRepository,
  ApiKeyRepository,
  Audited,
  AuditOptions,
  AuditRepository,
  DeviceGroupRepository,
  DirectorySettingsRepository,
  PortalSettingsRepository,
  SessionRepository,
  Store,
  StoreStatus,
} from './store.ts';

/** Ended sessions deleted per transaction by purgeExpired (a few milliseconds of work). */
const PURGE_CHUNK_ROWS = 2000;
/** Audit pages deleted per transaction by the audit purge (a login's page holds tens of events). */
const PURGE_CHUNK_PAGES = 500;

export interface SqliteStoreOptions {
  /** The directory's bind password: a file of each box's own (directoryPasswordPath), never in the DB. */
  passwordFile: string;
  /** Default the system clock. */
  clock?: Clock;
  /** The timers a write waits on while another process holds the write lock (tests pass their own). */
  schedule?: Schedule;
  /** The shortest idle timeout a portal save may set (config/schema.ts leastIdleSeconds); default 0. */
  leastIdleSeconds?: number;
  /** Whether a directory is applied, for a portal save (tests); default this DB's directory row. */
  directoryApplied?: () => boolean;
  /** How long an admin's sign-in lasts; default DEFAULT_SESSION_TTL_MS (8 hours). */
  sessionTtlMs?: number;
  /** Where a failed write of an API key's "last used" is reported; default stderr. */
  log?: Log;
  /**
   * Session, API-key and admin-sign-in writes go to a GroupCommit on `db` (which also writes each batch's audit
   * rows at its end); this wraps what the store calls (tests, to act between a request's reads and its write;
   * the bench, to time the writes). The wrapper may delay or time a write, never keep the batch from its tail.
   */
  wrapCommits?: (group: Commits) => Commits;
  /** The audit trail's box name and sink; default os.hostname() and none. */
  audit?: AuditOptions;
}

/**
 * The store of one box: the Store interface over the session DB in stateDir. Reads are the classes' own
 * (synchronous, from the file). Writes that were synchronous go through the group commit, one transaction per
 * turn of the event loop, so each promise resolves once its transaction is committed, and a DB locked by
 * another process is waited for on timers (busy.ts), never in SQLite's busy handler. The writes that already
 * returned promises (Device Groups, the settings, an admin's password and sign-in) keep their own IMMEDIATE
 * transactions and busy retries. close() waits for every write asked for before it, then closes the DB; a
 * write asked for after it fails with STORE_UNAVAILABLE.
 */
export function openSqliteStore(db: Db, options: SqliteStoreOptions): Store {
  const clock = options.clock ?? systemClock;
  const schedule = options.schedule === undefined ? {} : { schedule: options.schedule };
  const sessions = new SessionStore(db, clock);
  const apiKeys = new ApiKeyStore(db, clock, options.log === undefined ? {} : { log: options.log });
  const admins = new AdminStore(db, clock, {
    ...schedule,
    ...(options.sessionTtlMs === undefined ? {} : { sessionTtlMs: options.sessionTtlMs }),
  });
  const groups = new DeviceGroupStore(db, { clock, ...schedule });
  const portal = new PortalSettingsStore(db, {
    clock,
    ...schedule,
    ...(options.leastIdleSeconds === undefined ? {} : { leastIdleSeconds: options.leastIdleSeconds }),
    ...(options.directoryApplied === undefined ? {} : { directoryApplied: options.directoryApplied }),
  });
  const directory = new DirectorySettingsStore(db, {
    passwordFile: options.passwordFile,
    clock,
    ...schedule,
  });
  const auditStore = new AuditStore(db);
  const journal = new AuditJournal(
    (records) => auditStore.insert(records),
    shipper(options.audit, options.log ?? (() => {})),
  );
  const group = new GroupCommit(db, { clock, ...schedule, tails: [journal] });
  const commits = options.wrapCommits?.(group) ?? group;
  const box = options.audit?.box ?? hostname();
  const graceMs = idleGraceMs(options.leastIdleSeconds ?? 0);

  const pending = new Set<Promise<unknown>>();
  let closing: Promise<void> | undefined;
  /** A write under way: close() waits for it. Refused once close() was called. */
  const track = <T>(start: () => Promise<T>): Promise<T> => {
    if (closing !== undefined)
      return Promise.reject(new DoormanError('STORE_UNAVAILABLE', `the session DB ${db.name} is closed`));
    const write = start();
    pending.add(write);
    const done = () => void pending.delete(write);
    write.then(done, done);
    return write;
  };
  /** A synchronous write, in the next shared transaction of the group commit. */
  const commit = <T>(write: () => T): Promise<T> => track(() => commits.run(write));
  /**
   * A write and the audit events it records, in the same shared transaction: the events only if the write did
   * not throw, inserted with the batch's others at the end of the transaction (an insert of the trail has no
   * constraint of its own to fail on) and shipped to the sinks once committed. `audit` may depend on what the
   * write did. No savepoint: it would cost a login more than the row.
   */
  const audited = <T>(write: () => T, audit: Audited | undefined | ((value: T) => Audited | undefined)) => {
    if (audit === undefined) return commit(write);
    return commit(() => {
      const value = write();
      record(typeof audit === 'function' ? audit(value) : audit);
      return value;
    });
  };
  /** A write's events, into the transaction under way (see audited). */
  const record = (audit: Audited | undefined): void => {
    if (audit !== undefined) journal.add(auditRecords(audit, clock.now(), box));
  };

  const sessionRepository: SessionRepository = {
    find: (key) => sessions.find(key),
    list: () => sessions.list(),
    search: (search) => sessions.search(search),
    countBySource: (sources) => sessions.countBySource(sources),
    // The session replaced is read inside the write's transaction (SessionStore.startReplacing: one read, then
    // a renewal in place or a replacement): a read there costs a login far less than one before it, which
    // would open a read snapshot of its own. audited() written out, one closure a login: every login is here.
    start: (input, audit) =>
      commit(() => {
        const { session, replaced } = sessions.startReplacing(input);
        record(typeof audit === 'function' ? audit(replaced) : audit);
        return session;
      }),
    // A registration from an IPv6 client is bound to the client's address too (lib/portal/address-binding.ts):
    // Squid cannot give the helper an IPv6 client's MAC. Both in one transaction, answered once committed
    // (the session helper sees them when the browser follows the redirect).
    startPortal: (start, { clientIp, settings }, audit) =>
      audited(
        () => {
          const told = typeof audit === 'function';
          const replaced = told ? sessions.replaced(start.key) : undefined;
          const session = sessions.start(start);
          const bind =
            session.key.kind === 'mac' && clientIp.includes(':')
              ? addressBinding(session, clientIp, settings)
              : undefined;
          const replacedOnAddress = told && bind !== undefined ? sessions.replaced(bind.key) : undefined;
          return {
            session,
            binding: bind === undefined ? undefined : sessions.start(bind),
            replaced,
            replacedOnAddress,
          };
        },
        typeof audit === 'function' ? (started) => audit(started.replaced, started.replacedOnAddress) : audit,
      ),
    // The group is decided inside the transaction that writes, not when the request arrived: a Device Group
    // change ends the agreements of the groups it switches off in its own transaction, and SQLite runs the two
    // one after the other. Decided any earlier, a group switched off between the check and this write would
    // leave a session that sweep never saw, and the session helper would answer OK for a group that is off.
    // activeGroupFor reads the groups afresh after any commit, this process's or another's.
    startAgreement: (ip, settings, audit) =>
      audited(
        () => {
          const group = groups.activeGroupFor(ip);
          if (group === undefined) return undefined;
          return { group, session: sessions.start(agreementSession(ip, group.name, settings, clock.now())) };
        },
        (started) => (started === undefined ? undefined : withGroup(audit, started.group.name)),
      ),
    end: (key, audit) => audited(() => sessions.end(key), audit),
    clear: (audit) => audited(() => sessions.clear(), audit),
    endBySource: (sources, audit) => audited(() => sessions.endBySource(sources), audit),
    endByUser: (username, audit) => audited(() => sessions.endByUser(username), audit),
    touch: (seen) => commit(() => sessions.touch(seen)),
    // In bounded chunks, each its own commit: a million ended sessions never hold the event loop (and the
    // lookups waiting on it) for a second in one statement.
    purgeExpired: async () => {
      let purged = 0;
      for (;;) {
        const ended = await audited(() => sessions.purgeEnded(PURGE_CHUNK_ROWS, graceMs), expiryEvents);
        const n = ended.length;
        purged += n;
        if (n < PURGE_CHUNK_ROWS) return purged;
      }
    },
    changeStamp: () => sessions.changeStamp(),
  };

  const apiKeyRepository: ApiKeyRepository = {
    create: (name) => commit(() => apiKeys.create(name)),
    verify: (presented) => apiKeys.verify(presented),
    check: (presented) => apiKeys.check(presented),
    list: () => apiKeys.list(),
    revoke: (name) => commit(() => apiKeys.revoke(name)),
  };

  const adminRepository: AdminRepository = {
    setPassword: (name, password) => track(() => admins.setPassword(name, password)),
    verify: (name, password) => track(() => admins.verify(name, password)),
    has: (name) => admins.has(name),
    list: () => admins.list(),
    remove: (name, options) => commit(() => admins.remove(name, options)),
    signIn: (name, password) => track(() => admins.signIn(name, password)),
    createSession: (userName) => commit(() => admins.createSession(userName)),
    findSession: (token) => admins.findSession(token),
    endSession: (token) => commit(() => admins.endSession(token)),
    endSessionsOf: (userName) => commit(() => admins.endSessionsOf(userName)),
  };

  const deviceGroupRepository: DeviceGroupRepository = {
    list: () => groups.list(),
    get: (id) => groups.get(id),
    findByName: (name) => groups.findByName(name),
    activeGroupFor: (ip) => groups.activeGroupFor(ip),
    create: (input) => track(() => groups.create(input)),
    update: (id, changes) => track(() => groups.update(id, changes)),
    setActive: (id, active) => track(() => groups.setActive(id, active)),
    remove: (id) => track(() => groups.remove(id)),
  };

  const portalRepository: PortalSettingsRepository = {
    load: () => portal.load(),
    version: () => portal.version(),
    save: (input) => track(() => portal.save(input)),
    update: (patch) => track(() => portal.update(patch)),
  };

  const directoryRepository: DirectorySettingsRepository = {
    load: () => directory.load(),
    version: () => directory.version(),
    apply: (input, password, applyOptions) => track(() => directory.apply(input, password, applyOptions)),
  };

  const auditRepository: AuditRepository = {
    record: (events) => audited(() => undefined, events),
    list: async (query) => auditStore.list(query),
    purge: async (before) => {
      let purged = 0;
      for (;;) {
        const { pages, events } = await commit(() => auditStore.purge(before, PURGE_CHUNK_PAGES));
        purged += events;
        if (pages < PURGE_CHUNK_PAGES) return purged;
      }
    },
  };

  return {
    engine: 'sqlite',
    sessions: sessionRepository,
    apiKeys: apiKeyRepository,
    admins: adminRepository,
    deviceGroups: deviceGroupRepository,
    portal: portalRepository,
    directory: directoryRepository,
    audit: auditRepository,
    status: async (): Promise<StoreStatus> => ({
      engine: 'sqlite',
      location: db.name,
      schemaVersion: db.open ? (db.pragma('user_version', { simple: true }) as number) : undefined,
      connected: db.open,
    }),
    close: () =>
      (closing ??= (async () => {
        await Promise.allSettled([...pending]);
        if (db.open) db.close();
      })()),
  };
}
