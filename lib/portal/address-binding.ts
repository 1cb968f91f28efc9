import { InvalidInputError, showValue } from '../errors.ts';
import { normaliseIp } from '../net/address.ts';
import type { Session, StartSession } from '../store/session.ts';
import { bindingIdleMs } from './session-limits.ts';
import type { PortalSettings } from './settings.ts';

/**
 * Device Registration ties a username to a MAC address, but Squid 5.7 never reads the IPv6 neighbour table:
 * for an IPv6 client its `%>eui` is zeros or the interface id, so the session helper cannot find the MAC
 * registration by itself. An ADDRESS BINDING bridges the gap: a session on the client's current IP with the
 * registration's username, made when the device registers (splash page) and whenever the ICAP decision finds,
 * in the neighbour table, that an unidentified client's MAC is registered (the device moved to a new address,
 * or its binding ended).
 *
 * An address is not a device: another device may take it once this one leaves. So a binding
 * - carries the registration's MAC, and the session helper refuses it when Squid names another device on the
 *   address (a real unicast %>eui: IPv4 on the proxy's link), and so does every reader that does not know the
 *   client's MAC at all (isLive in portal-sessions.ts): the ICAP decision then looks at the neighbour table;
 * - ends at a fixed time: idleTimeoutMinutes after the neighbour table last showed the device there (when the
 *   binding was made), or when the registration ends, whichever is first. Traffic does not extend it (the
 *   newcomer's traffic would); renewing it means a new look at the neighbour table.
 * So a binding outlives its device's use of the address by at most the idle timeout, and for an IPv4 client
 * not at all.
 */

/**
 * The session to start (SessionStore.start) that binds `ip` to the MAC registration `registration`: key
 * {kind:'ip'} (normalised), source 'registration', the registration's username, MAC and expiry, and a fixed
 * end (lifetimeMs) bindingIdleMs(settings) after it starts (session-limits.ts: 60 minutes when the settings
 * set no idle timeout). Pure: no clock, no DB (the store applies lifetimeMs with its clock).
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
    mac: registration.key.value,
    ...(registration.expiresAt === undefined ? {} : { expiresAt: registration.expiresAt }),
    idleTimeoutMs: bindingIdleMs(settings),
    lifetimeMs: bindingIdleMs(settings),
  };
}
