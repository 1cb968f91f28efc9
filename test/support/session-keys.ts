import type { SessionKey } from '../../lib/store/session.ts';

/** The session key of a client's address, as Squid's %SRC looks it up. */
export const ip = (value: string): SessionKey => ({ kind: 'ip', value });

/** The session key of a device's MAC, as Squid's %>eui looks it up. */
export const mac = (value: string): SessionKey => ({ kind: 'mac', value });
