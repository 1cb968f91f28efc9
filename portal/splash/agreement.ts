import type { Clock } from '../../lib/clock.ts';
import { agreementSession } from '../../lib/portal/portal-sessions.ts';
import type { DeviceGroup, PortalSettings } from '../../lib/portal/settings.ts';
import type { Commits } from '../../lib/store/group-commit.ts';
import type { Session, SessionStore } from '../../lib/store/session-store.ts';

/**
 * Usage Agreement Only: accepting the policy starts `agreement:<group>` on the device's address. Which active
 * Device Group holds the device is decided inside the very transaction that writes the session, not when the
 * request arrives: a Device Group change (lib/store/device-group-store.ts) ends the agreements of the groups
 * it switches off in its own transaction, and SQLite runs the two one after the other. Decided any earlier,
 * a group switched off between the check and the group commit's write would leave a session the sweep never
 * saw, and the session helper would answer OK for a group that is off.
 */
export interface AgreementGroups {
  /**
   * The first active group holding `ip`, as the DB holds it when called (the real store re-reads its groups
   * after any commit, by this process or another: see DeviceGroupStore.activeGroupFor).
   */
  activeGroupFor(ip: string): DeviceGroup | undefined;
}

export interface AgreementStores {
  sessions: SessionStore;
  commits: Commits;
  deviceGroups: AgreementGroups;
  clock: Clock;
}

/** The session started, with its group; undefined when no active group holds the device at write time. */
export function startAgreement(
  stores: AgreementStores,
  ip: string,
  settings: Pick<PortalSettings, 'idleTimeoutMinutes' | 'hardTimeoutMinutes'>,
): Promise<{ session: Session; group: DeviceGroup } | undefined> {
  const { sessions, deviceGroups, clock } = stores;
  return stores.commits.run(() => {
    const group = deviceGroups.activeGroupFor(ip);
    if (group === undefined) return undefined;
    return { group, session: sessions.start(agreementSession(ip, group.name, settings, clock.now())) };
  });
}
