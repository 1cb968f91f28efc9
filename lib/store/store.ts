import type { AuditInput, AuditRecord } from '../audit/event.ts';
import type { AuditPage, AuditQuery } from '../audit/query.ts';
import type { DirectorySettings } from '../directory/settings.ts';
import type { DeviceGroup, PortalSettings } from '../portal/settings.ts';
import type { AdminSession, AdminUserInfo, NewAdminSession } from './admin-store.ts';
import type { ApiKeyInfo } from './api-key-store.ts';
import type { ChangedDeviceGroup, DeviceGroupChanges } from './device-group-store.ts';
import type { AppliedDirectory, ApplyOptions, ApplyResult } from './directory-settings-store.ts';
import type { PortalSaveResult, PortalSettingsPatch } from './portal-settings-store.ts';
import type { SessionPage, SessionSearch } from './session-search.ts';
import type { Replaced, Session, SessionKey, SessionSource, StartSession } from './session.ts';

/**
 * What every box of a site shares, whichever engine holds it: one interface, two implementations (SQLite in
 * stateDir for one box, lib/store/sqlite-store.ts; PostgreSQL for several, lib/store/postgres/).
 *
 * The rule of the interface: **reads that a request or a lookup makes are synchronous** and never wait on the
 * network (SQLite answers them from its file; PostgreSQL from the process's replica of the tables, kept by
 * LISTEN and change numbers); **writes return a promise** that resolves once the write is durable and this
 * process's own reads see it. A write that decides something (which Device Group holds a device, whether a
 * name is taken) decides inside the transaction that writes. While the engine is unreachable writes reject
 * with STORE_UNAVAILABLE (the web app's 503) and reads go on answering from what was last known.
 *
 * What stays per box is not here: seamless sign-on's state (each box joins as its own computer account), the
 * Negotiate/NTLM client counts, the password-guessing counters (local SQLite always), and the files of
 * secrets (proxy key, bind password).
 */

/**
 * The audit events a write records with it (lib/audit/event.ts): written in the write's own transaction, so an
 * event exists if and only if its change committed, then handed to the audit sinks (file, syslog).
 */
export type Audited = AuditInput | readonly AuditInput[];

/** A splash-page session as started: its address binding, and the live sessions each replaced. */
export interface PortalStarted {
  session: Session;
  binding: Session | undefined;
  replaced: Replaced | undefined;
  replacedOnAddress: Replaced | undefined;
}

/** Sessions: one live identity per key (an IP address or a MAC address). */
export interface SessionRepository {
  /** The live session on a key (hard expiry checked; idleness is the caller's, see lib/portal/portal-sessions.ts). */
  find(key: SessionKey): Session | undefined;
  /** Every live session, ordered by key kind and key. */
  list(): Session[];
  /**
   * A page of the live sessions matching a search, in list()'s order (lib/store/session-search.ts): at most
   * `limit`, never all of them sorted or copied to find it.
   */
  search(search: SessionSearch): SessionPage;
  /** How many live sessions these ways in made (the portal's count on the admin screens), none copied. */
  countBySource(sources: readonly SessionSource[]): number;
  /** Start a session on a key, replacing any there. Writes of one event-loop turn share one transaction. */
  /**
   * `audit` may be given the live session this one replaces on the key, found by the write (a login's
   * api.replaced): undefined when there was none, or it was a renewal (the same user by the same way in,
   * see replacedUnlessRenewal).
   */
  start(
    input: StartSession,
    audit?: Audited | ((previous: Replaced | undefined) => Audited),
  ): Promise<Session>;
  /**
   * A splash-page session, and for a registration from an IPv6 client its address binding too
   * (lib/portal/address-binding.ts), in one transaction.
   */
  startPortal(
    start: StartSession,
    options: { clientIp: string; settings: PortalSettings },
    /**
     * As start()'s: may be given the live session this one replaces on its key (a sign-in's detail.replaced),
     * and the one its address binding replaces on the client's IPv6 address.
     */
    audit?: Audited | ((previous: Replaced | undefined, previousOnAddress: Replaced | undefined) => Audited),
  ): Promise<PortalStarted>;
  /**
   * Usage Agreement Only: `agreement:<group>` on `ip`, the group being the first active Device Group holding
   * it, decided inside the transaction that writes; undefined (nothing written) when no active group does.
   */
  startAgreement(
    ip: string,
    settings: Pick<PortalSettings, 'idleTimeoutMinutes' | 'hardTimeoutMinutes'>,
    /** Recorded only when a session was started (detail.group is added). */
    audit?: Audited,
  ): Promise<{ session: Session; group: DeviceGroup } | undefined>;
  /** End the session on a key: the ended session (live or expired), or undefined if there was none. */
  /** `audit` may be given the ended session (undefined: there was none) to say what to record. */
  end(
    key: SessionKey,
    audit?: Audited | ((ended: Session | undefined) => Audited | undefined),
  ): Promise<Session | undefined>;
  /** End every session; how many there were. */
  clear(audit?: Audited): Promise<number>;
  /** End the sessions made by these ways in (Clear current sessions); how many. */
  endBySource(sources: readonly SessionSource[], audit?: Audited): Promise<number>;
  /** End every session of this user name (exactly as stored: the admin's "end all of a user"); how many. */
  endByUser(username: string, audit?: Audited): Promise<number>;
  /** Record "last seen" times (session id → ms); a later time than the stored one wins. */
  touch(seen: ReadonlyMap<number, number>): Promise<void>;
  /**
   * Delete ended sessions (past their hard expiry, or idle past their limit by more than the helpers' flush
   * lag) and record a session.expired for each, in the transaction that deletes it; how many.
   */
  purgeExpired(): Promise<number>;
  /** Moves whenever a session may have changed (any box's write): a reader keeps answers cached until then. */
  changeStamp(): string;
}

/** The login API's keys: only a hash of each is kept. */
export interface ApiKeyRepository {
  /** A new key under a unique name: the key itself is in the answer and nowhere else, ever. */
  create(name: string): Promise<{ key: string; info: ApiKeyInfo }>;
  /** A well-formed, known, unrevoked key; the same work in every case (timing tells nothing). */
  verify(presented: string): boolean;
  /** What verify() does, answering the key's name when accepted (the audit trail's actor of an API call). */
  check(presented: string): string | undefined;
  list(): ApiKeyInfo[];
  revoke(name: string): Promise<ApiKeyInfo>;
}

/** The web app's administrators and their sign-ins. */
export interface AdminRepository {
  setPassword(name: string, password: string): Promise<{ created: boolean }>;
  verify(name: string, password: string): Promise<boolean>;
  has(name: string): boolean;
  list(): AdminUserInfo[];
  /**
   * Remove an administrator and end their sign-ins (NOT_FOUND if there is none). With `keepOne` (the admin
   * screen) the last administrator stays (CONFLICT), decided in the transaction that deletes, so two admins
   * removing each other at once cannot leave none; the CLI may remove the last (`admin passwd` makes one again).
   */
  remove(name: string, options?: { keepOne?: boolean }): Promise<void>;
  signIn(name: string, password: string): Promise<NewAdminSession | undefined>;
  createSession(userName: string): Promise<NewAdminSession>;
  findSession(token: string): AdminSession | undefined;
  endSession(token: string): Promise<boolean>;
  endSessionsOf(userName: string): Promise<number>;
}

/** The captive portal's Device Groups. Changes end the agreements they leave outside every active group. */
export interface DeviceGroupRepository {
  list(): DeviceGroup[];
  get(id: number): DeviceGroup | undefined;
  findByName(name: string): DeviceGroup | undefined;
  activeGroupFor(ip: string): DeviceGroup | undefined;
  create(input: { name: unknown; cidrs: unknown; active?: unknown }): Promise<DeviceGroup>;
  update(id: number, changes: DeviceGroupChanges): Promise<ChangedDeviceGroup>;
  setActive(id: number, active: boolean): Promise<ChangedDeviceGroup>;
  remove(id: number): Promise<ChangedDeviceGroup>;
}

/** The captive portal's settings; a save applies the new limits to the portal's open sessions, atomically. */
export interface PortalSettingsRepository {
  load(): PortalSettings;
  /** Moves when the settings may have changed. */
  version(): number;
  save(input: unknown): Promise<PortalSaveResult>;
  update(patch: PortalSettingsPatch): Promise<PortalSaveResult>;
}

/** The directory's settings (the bind password is a file of each box's own, never in the store). */
export interface DirectorySettingsRepository {
  load(): AppliedDirectory | undefined;
  version(): number;
  apply(input: unknown, password: string | undefined, options: ApplyOptions): Promise<ApplyResult>;
}

/**
 * The audit trail (lib/audit/). Not replicated: reads are an admin's and go to the database (async), unlike
 * the other repositories' reads. Identity events are written with their session write (SessionRepository's
 * `audit` arguments); everything else through record().
 */
export interface AuditRepository {
  /** Record events in one transaction of their own; resolves once committed (then they are shipped). */
  record(events: Audited): Promise<void>;
  /** A page of events, newest first, older than `query.before` (keyset paging). */
  list(query: AuditQuery): Promise<AuditPage>;
  /** Delete events older than `before` (ms), a bounded chunk per transaction; how many. */
  purge(before: number): Promise<number>;
}

/** How a store stamps and ships its audit events (lib/audit/sink.ts). */
export interface AuditOptions {
  /** This box's name in every event (config audit.box, default os.hostname()). */
  box: string;
  /** Given every committed event, after its commit: the file or syslog sink. Must not throw or block. */
  ship?: (records: readonly AuditRecord[]) => void;
}

export type StoreEngine = 'sqlite' | 'postgres';

/** `doorman store status`, and later the metrics. */
export interface StoreStatus {
  engine: StoreEngine;
  /** Where: the DB file, or the URL without a password. */
  location: string;
  /** The schema version the store is at, undefined when it cannot be read now. */
  schemaVersion: number | undefined;
  connected: boolean;
  /** PostgreSQL: how far behind this process's replica is (ms since it last caught up). */
  staleMs?: number;
  /** PostgreSQL standby lag of the server connected to, ms (0 on a primary). */
  replicationLagMs?: number;
}

export interface Store {
  readonly engine: StoreEngine;
  readonly sessions: SessionRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly admins: AdminRepository;
  readonly deviceGroups: DeviceGroupRepository;
  readonly portal: PortalSettingsRepository;
  readonly directory: DirectorySettingsRepository;
  readonly audit: AuditRepository;
  status(): Promise<StoreStatus>;
  /** Write what is pending (within a short deadline) and close. */
  close(): Promise<void>;
}

export type { DirectorySettings };
