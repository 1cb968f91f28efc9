import { DoormanError, showValue } from '../errors.ts';
import { agreementUsername } from '../portal/session-limits.ts';
import {
  CidrSet,
  parseDeviceGroup,
  type DeviceGroup,
  type DeviceGroupInput,
  type PortalProblem,
} from '../portal/settings.ts';

/**
 * What the Device Groups are whichever engine keeps them (lib/store/device-group-store.ts on SQLite,
 * lib/store/postgres/device-groups.ts on PostgreSQL): the check of a group's fields against the groups there
 * are, the lookup of an address's group, and what a change does to the Usage Agreement sessions. Pure.
 */

/** A group as changed or removed, and what the change did to the Usage Agreement sessions. */
export type ChangedDeviceGroup = DeviceGroup & {
  /** Live 'agreement' sessions ended because their address is in no active group any more. */
  endedSessions: number;
};

/** Changes to a group; what is left out stays as it is. */
export interface DeviceGroupChanges {
  name?: unknown;
  cidrs?: unknown;
  active?: unknown;
}

/** Bad Device Group fields: every problem, each naming its field and value. */
export class DeviceGroupInputError extends DoormanError {
  readonly problems: readonly PortalProblem[];
  constructor(problems: readonly PortalProblem[]) {
    super('INVALID_INPUT', problems.map((p) => `${p.field}: ${p.message}`).join('\n'));
    this.name = 'DeviceGroupInputError';
    this.problems = problems;
  }
}

/** Names compare case-insensitively beyond ASCII too (SQLite's NOCASE folds ASCII only). */
const fold = (name: string): string => name.toLowerCase();

/** The group of that name among `groups`, compared case-insensitively. */
export function groupNamed(groups: readonly DeviceGroup[], name: string): DeviceGroup | undefined {
  const wanted = fold(name);
  return groups.find((g) => fold(g.name) === wanted);
}

/**
 * Validate a group's fields (the group `id`'s, or a new one's when undefined) and refuse a name another of
 * `groups` has: every problem in one DeviceGroupInputError. `groups` must be read under the write's lock.
 */
export function checkDeviceGroup(
  fields: Record<string, unknown>,
  id: number | undefined,
  groups: readonly DeviceGroup[],
): DeviceGroupInput {
  const checked = parseDeviceGroup(fields);
  const problems = checked.ok ? [] : [...checked.problems];
  if (typeof fields.name === 'string') {
    const taken = groupNamed(groups, fields.name);
    if (taken !== undefined && taken.id !== id) problems.push(nameTaken(fields.name, taken.name));
  }
  if (!checked.ok || problems.length > 0) throw new DeviceGroupInputError(problems);
  return checked.group;
}

export const nameTaken = (name: string, by: string): PortalProblem => ({
  field: 'name',
  message: `${showValue(name)} is taken by the group ${showValue(by)}`,
});

export function noSuchGroup(id: number): DoormanError {
  return new DoormanError('NOT_FOUND', `Device Group: there is no group with id ${id}`);
}

/** An active group with its networks made ready for lookups. */
export interface ActiveGroup {
  group: DeviceGroup;
  networks: CidrSet;
}

/** The active ones of `groups` (in creation order), their networks ready for lookups. */
export function activeGroups(groups: readonly DeviceGroup[]): ActiveGroup[] {
  return groups.filter((g) => g.active).map((group) => ({ group, networks: new CidrSet(group.cidrs) }));
}

/** The first of `groups` (creation order: the device's group where groups overlap) with a network holding `ip`. */
export function firstHolding(groups: readonly ActiveGroup[], ip: string): DeviceGroup | undefined {
  return groups.find(({ networks }) => networks.has(ip))?.group;
}

/**
 * After a change of the groups: which live Usage Agreement sessions end (their address is in no active
 * group) and which carry another group's name now (agreementUsername).
 */
export function reviewAgreements(
  sessions: readonly { id: number; key: string; username: string }[],
  groups: readonly ActiveGroup[],
): { end: number[]; rename: { id: number; username: string }[] } {
  const review = { end: [] as number[], rename: [] as { id: number; username: string }[] };
  for (const session of sessions) {
    const group = firstHolding(groups, session.key);
    if (group === undefined) review.end.push(session.id);
    else if (session.username !== agreementUsername(group.name))
      review.rename.push({ id: session.id, username: agreementUsername(group.name) });
  }
  return review;
}
