import type { Session } from '../../lib/store/session.ts';
import { secondsRemaining } from '../../lib/portal/portal-sessions.ts';

/**
 * The Captive Portal API's state (RFC 8908 §5): `captive` (true while the client must visit the portal to get
 * access), `user-portal-url` (where a person does that), and for a client with a session `seconds-remaining`
 * (to its hard expiry; left out when it has none) and `can-extend-session` (false: a portal session cannot be
 * extended or ended by its user, only replaced by signing in again once it ended).
 */
export const CAPTIVE_JSON = 'application/captive+json';

export interface CaptiveState {
  captive: boolean;
  'user-portal-url': string;
  'seconds-remaining'?: number;
  'can-extend-session'?: boolean;
}

/**
 * `session`: the live session identifying the client, if any. `portalOff`: with the portal off, intercepted
 * clients browse unidentified, so nobody is held captive.
 */
export function captiveState(
  portalUrl: string,
  session: Session | undefined,
  portalOff: boolean,
  now: number,
): CaptiveState {
  if (session === undefined) return { captive: !portalOff, 'user-portal-url': portalUrl };
  const seconds = secondsRemaining(session, now);
  return {
    captive: false,
    'user-portal-url': portalUrl,
    ...(seconds === undefined ? {} : { 'seconds-remaining': seconds }),
    'can-extend-session': false,
  };
}
