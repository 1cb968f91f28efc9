import postgres from 'postgres';
import type { Clock } from '../../clock.ts';
import type { DeviceGroup, DeviceGroupInput } from '../../portal/settings.ts';
import {
  activeGroups,
  checkDeviceGroup,
  DeviceGroupInputError,
  firstHolding,
  groupNamed,
  nameTaken,
  noSuchGroup,
  reviewAgreements,
  type ActiveGroup,
  type ChangedDeviceGroup,
  type DeviceGroupChanges,
} from '../device-group-rules.ts';
import type { DeviceGroupRepository } from '../store.ts';
import type { Sql, Tx } from './connect.ts';
import type { Replica } from './replica.ts';
import { deleteSessions } from './session-deletions.ts';
import { writeChanges, type TakeChange } from './write.ts';

const byId = (tx: Tx) => tx<DeviceGroup[]>`SELECT id, name, cidrs, active FROM device_groups ORDER BY id`;

/**
 * The captive portal's Device Groups on PostgreSQL (the DeviceGroupStore of SQLite, shared by every box):
 * lookups (activeGroupFor on every Usage Agreement request) answer from this process's copy, read whole at each
 * change. A write takes the device_groups change number first, which holds its counter row until commit, so
 * the writes of every box run one after the other and decide (a name taken, the group there is) on the groups
 * as they are then; the unique index on lower(name) stands behind that.
 *
 * A change that takes addresses out of every active group ends the Usage Agreement sessions of those
 * addresses in the same transaction, and renames those whose group changed (SessionStore.retainAgreements):
 * it then takes the sessions change number too (after device_groups: see write.ts), stamps the sessions it
 * renames and records those it ends (session-deletions.ts), so every box's session copy follows.
 */
export class PgDeviceGroups implements DeviceGroupRepository {
  readonly #sql: Sql;
  readonly #replica: Replica;
  readonly #clock: Clock;
  #groups: DeviceGroup[] = [];
  #active: ActiveGroup[] = [];

  constructor(sql: Sql, replica: Replica, options: { clock: Clock }) {
    this.#sql = sql;
    this.#replica = replica;
    this.#clock = options.clock;
    replica.table('device_groups', {
      load: async (tx) => {
        const groups = [...(await byId(tx))];
        return () => {
          this.#groups = groups;
          this.#active = activeGroups(groups);
        };
      },
    });
  }

  /** Every group, in creation order. */
  list(): DeviceGroup[] {
    return this.#groups.map(copy);
  }

  get(id: number): DeviceGroup | undefined {
    const group = this.#groups.find((g) => g.id === id);
    return group === undefined ? undefined : copy(group);
  }

  /** The group of that name, compared case-insensitively. */
  findByName(name: string): DeviceGroup | undefined {
    const group = groupNamed(this.#groups, name);
    return group === undefined ? undefined : copy(group);
  }

  /** The first active group (in creation order) holding `ip`, as this process's copy has them. */
  activeGroupFor(ip: string): DeviceGroup | undefined {
    const group = firstHolding(this.#active, ip);
    return group === undefined ? undefined : copy(group);
  }

  /** Make a group (active unless `active: false`); every bad field in one DeviceGroupInputError. */
  create(input: { name: unknown; cidrs: unknown; active?: unknown }): Promise<DeviceGroup> {
    return this.#write(async (tx, take) => {
      const change = await take('device_groups');
      const group = checkDeviceGroup({ ...input, active: input.active ?? true }, undefined, await byId(tx));
      const [row] = await tx<DeviceGroup[]>`
        INSERT INTO device_groups (name, cidrs, active, created_at, updated_at, change)
        VALUES (${group.name}, ${tx.json(group.cidrs)}, ${group.active}, ${this.#clock.now()},
          ${this.#clock.now()}, ${change})
        RETURNING id, name, cidrs, active`;
      return row as DeviceGroup;
    }, input.name);
  }

  /**
   * Change a group's name, networks or state (NOT_FOUND if there is no such id); ends the Usage Agreement
   * sessions the change leaves outside every active group: how many in `endedSessions`.
   */
  update(id: number, changes: DeviceGroupChanges): Promise<ChangedDeviceGroup> {
    return this.#write(async (tx, take) => {
      const change = await take('device_groups');
      const groups = await byId(tx);
      const current = groups.find((g) => g.id === id);
      if (current === undefined) throw noSuchGroup(id);
      const { name, cidrs, active } = current;
      const group: DeviceGroupInput = checkDeviceGroup({ name, cidrs, active, ...changes }, id, groups);
      const [row] = await tx<DeviceGroup[]>`
        UPDATE device_groups SET name = ${group.name}, cidrs = ${tx.json(group.cidrs)},
          active = ${group.active}, updated_at = ${this.#clock.now()}, change = ${change}
        WHERE id = ${id} RETURNING id, name, cidrs, active`;
      const updated = row as DeviceGroup;
      const after = groups.map((g) => (g.id === id ? updated : g));
      return { ...updated, endedSessions: await this.#retainAgreements(tx, take, after) };
    }, changes.name);
  }

  setActive(id: number, active: boolean): Promise<ChangedDeviceGroup> {
    return this.update(id, { active });
  }

  /** Delete a group; it as it was (NOT_FOUND if none), with the agreements that ended with it. */
  remove(id: number): Promise<ChangedDeviceGroup> {
    return this.#write(async (tx, take) => {
      await take('device_groups');
      const [row] = await tx<DeviceGroup[]>`
        DELETE FROM device_groups WHERE id = ${id} RETURNING id, name, cidrs, active`;
      if (row === undefined) throw noSuchGroup(id);
      return { ...row, endedSessions: await this.#retainAgreements(tx, take, await byId(tx)) };
    });
  }

  /**
   * Inside a write, after the change, with `groups` as they now are: keep each live Usage Agreement session
   * whose address is in an active group (under that group's name), end the rest. Returns how many ended.
   */
  async #retainAgreements(tx: Tx, take: TakeChange, groups: readonly DeviceGroup[]): Promise<number> {
    const change = await take('sessions');
    const now = this.#clock.now();
    const sessions = await tx<{ id: number; key: string; username: string }[]>`
      SELECT id, key, username FROM sessions
      WHERE source = 'agreement' AND key_kind = 'ip' AND (expires_at IS NULL OR expires_at > ${now})
      FOR UPDATE`;
    const { end, rename } = reviewAgreements(sessions, activeGroups(groups));
    if (end.length > 0) await deleteSessions(tx, { change, now }, tx`id = ANY(${end}::bigint[])`);
    if (rename.length > 0) {
      await tx`
        UPDATE sessions SET username = r.username, change = ${change}
        FROM unnest(${rename.map((r) => r.id)}::bigint[], ${rename.map((r) => r.username)}::text[])
          AS r(id, username)
        WHERE sessions.id = r.id`;
    }
    return end.length;
  }

  /**
   * One write, answered once this process's copies hold it. The unique index on lower(name) catches what the
   * check under the lock cannot have missed unless the two foldings differ: the same problem then.
   */
  async #write<T>(work: (tx: Tx, take: TakeChange) => Promise<T>, name?: unknown): Promise<T> {
    try {
      return await writeChanges(this.#sql, this.#replica, work);
    } catch (error) {
      if (
        error instanceof postgres.PostgresError &&
        error.constraint_name === 'device_groups_name' &&
        typeof name === 'string'
      )
        throw new DeviceGroupInputError([nameTaken(name, name)]);
      throw error;
    }
  }
}

/** A group the caller may change without changing this process's copy. */
const copy = (g: DeviceGroup): DeviceGroup => ({
  id: g.id,
  name: g.name,
  cidrs: [...g.cidrs],
  active: g.active,
});
