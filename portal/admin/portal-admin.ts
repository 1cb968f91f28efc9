import type { Schedule } from '../../lib/store/busy.ts';
import type { DeviceGroupStore } from '../../lib/store/device-group-store.ts';
import type { PortalSettingsStore } from '../../lib/store/portal-settings-store.ts';
import type { SessionStore } from '../../lib/store/session-store.ts';

/**
 * What the captive portal screen needs of the session DB, and no more: the portal settings, the Device
 * Groups, and the sessions (counted, and ended by Clear current sessions). `doorman serve` passes the stores
 * themselves; each method named here does its own validation and locking.
 */
export interface PortalAdmin {
  settings: Pick<PortalSettingsStore, 'load' | 'save'>;
  deviceGroups: Pick<DeviceGroupStore, 'list' | 'get' | 'create' | 'update' | 'remove'>;
  sessions: Pick<SessionStore, 'list' | 'endBySource'>;
  /** The time zone the registration clear date is read in (the server's), named on the screen. Default: Intl's. */
  timeZone?: string;
  /** The shortest idle timeout the configuration allows (config/schema.ts leastIdleSeconds), named on the screen. */
  leastIdleMinutes?: number;
  /** The timers Clear current sessions waits on while another process holds the lock (tests pass their own). */
  schedule?: Schedule;
}
