import { InvalidInputError, showValue } from '../errors.ts';
import { normaliseIp } from '../net/address.ts';
import type { Session, StartSession } from '../store/session-store.ts';
import { bindingIdleMs } from './session-limits.ts';
import type { PortalSettings } from './settings.ts';

/**
 * Device Registration ties a username to a MAC address, but Squid 5.7 never reads the IPv6 neighbour table:
 * for an IPv6 client its `%>eui` is zeros or the interface id, so the session helper cannot find the MAC
 * registration by itself. An ADDRESS BINDING bridges the gap: a session on the client's current IP with the
 * registration's username, made when the device registers (splash page) and whenever the ICAP decision finds
 * that an unidentified IPv6 client's MAC is registered (the device moved to a new address, or the binding
 * went idle). It ends when the registration does (same expiry) or after idleTimeoutMinutes without traffic,
 * so an address later given to another device does not stay bound for long.
 */

/**
 * The session to start (SessionStore.start) that binds `ip` to the MAC registration `registration`: key
 * {kind:'ip'} (normalised), source 'registration', the registration's username and expiry, idleTimeoutMs from
 * settings.idleTimeoutMinutes (session-limits.ts's bindingIdleMs: 60 minutes when null; an address is not a
 * device, so a binding never lasts forever). Pure: no clock, no DB.
 * Throws InvalidInputError when `registration` is not a MAC registration or `ip` is not an address.
 */
export function addressBinding(registration: Session, ip: string, settings: PortalSettings): StartSession {
  if (registration.key.kind !== 'mac' || registration.source !== 'registration')
    throw new InvalidInputError(
      'registration',
      `session ${registration.id} is a ${registration.key.kind} session from ${registration.source}; ` +
        "expected a 'mac' session from 'registration'",
    );
  const address = normaliseIp(ip);
  if (address === undefined)
    throw new InvalidInputError('ip', `${showValue(ip)} is not an IPv4 or IPv6 address`);
  return {
    key: { kind: 'ip', value: address },
    username: registration.username,
    source: 'registration',
    ...(registration.expiresAt === undefined ? {} : { expiresAt: registration.expiresAt }),
    idleTimeoutMs: bindingIdleMs(settings),
  };
}
