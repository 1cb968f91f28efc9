import type {
  DeviceGroupRepository,
  PortalSettingsRepository,
  SessionRepository,
} from '../../lib/store/store.ts';

/**
 * What the captive portal screen needs of the store, and no more: the portal settings, the Device Groups,
 * and the sessions (counted, and ended by Clear current sessions). `doorman serve` passes the store's
 * repositories themselves; each method named here does its own validation and locking, and a write waits
 * for a lock held elsewhere by itself (a StoreBusyError past its deadline: the screen's 503).
 */
export interface PortalAdmin {
  settings: Pick<PortalSettingsRepository, 'load' | 'save'>;
  deviceGroups: Pick<DeviceGroupRepository, 'list' | 'get' | 'create' | 'update' | 'remove'>;
  sessions: Pick<SessionRepository, 'countBySource' | 'endBySource'>;
  /** The time zone the registration clear date is read in (the server's), named on the screen. Default: Intl's. */
  timeZone?: string;
  /** The shortest idle timeout the configuration allows (config/schema.ts leastIdleSeconds), named on the screen. */
  leastIdleMinutes?: number;
}
