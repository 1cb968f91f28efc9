import type { Session, SessionKey, StartSession } from '../store/session.ts';
import type { SessionRepository } from '../store/store.ts';
import { agreementUsername, portalSessionLimits, registrationExpiry } from './session-limits.ts';
import type { PortalSettings } from './settings.ts';

/**
 * The sessions the splash page starts, one function per mode, exactly as the portal's state table says (see
 * lib/portal/session-limits.ts for the limits). Pure: the store writes them (SessionRepository.startPortal,
 * startAgreement), an IPv6 registration with its address binding.
 */

/** Authentication: the directory's name for the user, on the device's IP, with the idle and hard timeouts. */
export function authenticationSession(
  ip: string,
  username: string,
  settings: Pick<PortalSettings, 'idleTimeoutMinutes' | 'hardTimeoutMinutes'>,
  now: number,
): StartSession {
  return {
    key: { kind: 'ip', value: ip },
    username,
    source: 'portal',
    ...portalSessionLimits(settings, now),
  };
}

/** Usage Agreement Only: `agreement:<group>` on the device's IP, with the idle and hard timeouts. */
export function agreementSession(
  ip: string,
  groupName: string,
  settings: Pick<PortalSettings, 'idleTimeoutMinutes' | 'hardTimeoutMinutes'>,
  now: number,
): StartSession {
  return {
    key: { kind: 'ip', value: ip },
    username: agreementUsername(groupName),
    source: 'agreement',
    ...portalSessionLimits(settings, now),
  };
}

/** Device Registration: the user on the device's MAC (normalised), until the clear date begins; no idle limit. */
export function registrationSession(
  mac: string,
  username: string,
  settings: Pick<PortalSettings, 'registrationClearDate'>,
  now: number,
): StartSession {
  const expiresAt = registrationExpiry(settings, now);
  return {
    key: { kind: 'mac', value: mac },
    username,
    source: 'registration',
    ...(expiresAt === undefined ? {} : { expiresAt }),
  };
}

/**
 * Whether a stored session still identifies its device as far as the DB can tell: before its hard expiry and
 * not idle past its limit by its stored "last seen". The ICAP decision's test too (icap-server/session-cache.ts), with no grace: the
 * helpers write "last seen" only every lastSeenFlushSeconds, so a session may look idle here while a helper
 * still answers OK for it. Erring that way only shows the sign-in form to a device that is still connected
 * (signing in again replaces the session); erring the other way would send a device the helper has already
 * refused from the splash page back to ICAP's redirect, a loop.
 *
 * An address binding with a MAC (lib/portal/address-binding.ts) identifies only the device with that MAC:
 * it counts only when `clientMac` (normaliseMac form) is that MAC. A caller that does not know the client's
 * MAC (the ICAP decision) never counts one: the helper refused it (another device on the address, or its end
 * passed), and in registration mode the decision looks at the neighbour table instead.
 */
export function isLive(session: Session, now: number, clientMac?: string): boolean {
  if (session.mac !== undefined && session.mac !== clientMac) return false;
  if (session.expiresAt !== undefined && session.expiresAt <= now) return false;
  return session.idleTimeoutMs === undefined || now - session.lastSeen <= session.idleTimeoutMs;
}

/** The live session identifying a client: on its IP, else (registration mode) on its MAC. */
export function liveSessionFor(
  sessions: Pick<SessionRepository, 'find'>,
  keys: readonly SessionKey[],
  now: number,
): Session | undefined {
  const mac = keys.find((key) => key.kind === 'mac')?.value;
  for (const key of keys) {
    const found = sessions.find(key);
    if (found !== undefined && isLive(found, now, mac)) return found;
  }
  return undefined;
}

/** Whole seconds until the hard expiry (RFC 8908 seconds-remaining), at least 0; undefined when there is none. */
export function secondsRemaining(session: Session, now: number): number | undefined {
  if (session.expiresAt === undefined) return undefined;
  return Math.max(0, Math.floor((session.expiresAt - now) / 1000));
}
