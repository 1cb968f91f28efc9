import type { Statement } from 'better-sqlite3';
import type { Clock } from '../clock.ts';
import type { DeviceGroup, DeviceGroupInput } from '../portal/settings.ts';
import { realSchedule, retryWhileBusy, type Schedule } from './busy.ts';
import type { Db } from './database.ts';
import {
  activeGroups,
  checkDeviceGroup,
  firstHolding,
  groupNamed,
  noSuchGroup as notFound,
  type ActiveGroup,
  type ChangedDeviceGroup,
  type DeviceGroupChanges,
} from './device-group-rules.ts';
import { SessionStore } from './session-store.ts';

export {
  DeviceGroupInputError,
  type ChangedDeviceGroup,
  type DeviceGroupChanges,
} from './device-group-rules.ts';

/**
 * Device Groups: named sets of networks, each active or not. In the Usage Agreement mode only a device in an
 * active group gets web access after accepting the policy. Groups are kept in creation order (id); where
 * groups overlap, the first one is the device's group.
 *
 * So a change that takes addresses out of every active group (a group turned off, removed, or given other
 * networks) ends the Usage Agreement sessions of those addresses in the same transaction, and the devices
 * meet the splash page again; a session whose device is now in another group (or in a renamed one) is kept
 * and carries that group's name (agreementUsername).
 */

interface Row {
  id: number;
  name: string;
  cidrs: string;
  active: number;
}

const toGroup = (r: Row): DeviceGroup => ({
  id: r.id,
  name: r.name,
  cidrs: JSON.parse(r.cidrs) as string[],
  active: r.active === 1,
});

export class DeviceGroupStore {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #schedule: Schedule;
  readonly #list: Statement;
  readonly #byId: Statement;
  readonly #insert: Statement;
  readonly #update: Statement;
  readonly #delete: Statement;
  readonly #dataVersion: Statement;
  /** The active groups and their matchers, as of `key` (see #activeGroups). */
  #cache: { key: string; groups: ActiveGroup[] } | undefined;
  /** Own commits, which PRAGMA data_version does not count. */
  #ownWrites = 0;
  readonly #sessions: SessionStore;

  /** `schedule`: the timers a write waits on while another process holds the lock (tests pass their own). */
  constructor(db: Db, options: { clock: Clock; schedule?: Schedule }) {
    this.#db = db;
    this.#clock = options.clock;
    this.#schedule = options.schedule ?? realSchedule;
    this.#list = db.prepare('SELECT id, name, cidrs, active FROM device_groups ORDER BY id');
    this.#byId = db.prepare('SELECT id, name, cidrs, active FROM device_groups WHERE id = ?');
    this.#insert = db.prepare(
      `INSERT INTO device_groups (name, cidrs, active, created_at, updated_at)
       VALUES (@name, @cidrs, @active, @now, @now) RETURNING id, name, cidrs, active`,
    );
    this.#update = db.prepare(
      `UPDATE device_groups SET name = @name, cidrs = @cidrs, active = @active, updated_at = @now
       WHERE id = @id RETURNING id, name, cidrs, active`,
    );
    this.#delete = db.prepare('DELETE FROM device_groups WHERE id = ? RETURNING id, name, cidrs, active');
    this.#dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.#sessions = new SessionStore(db, options.clock);
  }

  /** Every group, in creation order. */
  list(): DeviceGroup[] {
    return (this.#list.all() as Row[]).map(toGroup);
  }

  get(id: number): DeviceGroup | undefined {
    const row = this.#byId.get(id) as Row | undefined;
    return row === undefined ? undefined : toGroup(row);
  }

  /** The group of that name, compared case-insensitively. */
  findByName(name: string): DeviceGroup | undefined {
    return groupNamed(this.list(), name);
  }

  /**
   * Make a group (active unless `active: false`). Every bad field is listed in one DeviceGroupInputError; a
   * name already taken (in any case) is one of them.
   */
  create(input: { name: unknown; cidrs: unknown; active?: unknown }): Promise<DeviceGroup> {
    return this.#write(() => {
      const group = this.#check({ ...input, active: input.active ?? true }, undefined);
      const row = this.#insert.get({ ...this.#params(group), now: this.#clock.now() }) as Row;
      return toGroup(row);
    });
  }

  /**
   * Change a group's name, networks or state (NOT_FOUND if there is no such id). Ends the Usage Agreement
   * sessions of addresses the change leaves outside every active group (see above): how many in
   * `endedSessions`.
   */
  update(id: number, changes: DeviceGroupChanges): Promise<ChangedDeviceGroup> {
    return this.#write(() => {
      const current = this.#existing(id);
      const { name, cidrs, active } = current;
      const group = this.#check({ name, cidrs, active, ...changes }, id);
      const row = this.#update.get({ ...this.#params(group), id, now: this.#clock.now() }) as Row;
      return { ...toGroup(row), endedSessions: this.#reviewAgreements() };
    });
  }

  setActive(id: number, active: boolean): Promise<ChangedDeviceGroup> {
    return this.update(id, { active });
  }

  /**
   * Delete a group; returns it as it was (NOT_FOUND if there is no such id), with the number of Usage
   * Agreement sessions ended because their address is in no other active group.
   */
  remove(id: number): Promise<ChangedDeviceGroup> {
    return this.#write(() => {
      const row = this.#delete.get(id) as Row | undefined;
      if (row === undefined) throw notFound(id);
      return { ...toGroup(row), endedSessions: this.#reviewAgreements() };
    });
  }

  /**
   * Inside a write's transaction, after the change: keep each Usage Agreement session whose address is in an
   * active group (under that group's name), end the rest. The groups are read afresh, not from the cache,
   * which is keyed by commits this transaction has not made yet. Returns how many ended.
   */
  #reviewAgreements(): number {
    const groups = this.#readActiveGroups();
    return this.#sessions.retainAgreements((ip) => firstHolding(groups, ip)?.name).ended;
  }

  /**
   * The first active group (in creation order) with a network that holds `ip`; an IPv4-mapped IPv6 address
   * is matched as the IPv4 address. Undefined for a device outside every active group, or a non-address.
   * The groups are read again only after a write (this process's or another's): one PRAGMA per call.
   */
  activeGroupFor(ip: string): DeviceGroup | undefined {
    return firstHolding(this.#activeGroups(), ip);
  }

  #activeGroups(): ActiveGroup[] {
    const key = `${this.#dataVersion.get() as number}:${this.#ownWrites}`;
    if (this.#cache?.key !== key) this.#cache = { key, groups: this.#readActiveGroups() };
    return this.#cache.groups;
  }

  /** The active groups as the DB holds them now, in creation order, their networks ready for lookups. */
  #readActiveGroups(): ActiveGroup[] {
    return activeGroups(this.list());
  }

  #existing(id: number): DeviceGroup {
    const current = this.get(id);
    if (current === undefined) throw notFound(id);
    return current;
  }

  /** Validate, and refuse a name another group has (case-insensitively). Runs under the write lock. */
  #check(fields: Record<string, unknown>, id: number | undefined): DeviceGroupInput {
    return checkDeviceGroup(fields, id, this.list());
  }

  #params(group: DeviceGroupInput) {
    return { name: group.name, cidrs: JSON.stringify(group.cidrs), active: group.active ? 1 : 0 };
  }

  /**
   * One IMMEDIATE transaction (the lock is taken before anything is read), tried again on timers while
   * another process holds the lock (busy.ts); StoreBusyError after BUSY_DEADLINE_MS.
   */
  async #write<T>(action: () => T): Promise<T> {
    const once = this.#db.transaction(action);
    try {
      return await retryWhileBusy(() => once.immediate(), { clock: this.#clock, schedule: this.#schedule });
    } finally {
      this.#ownWrites++;
    }
  }
}
