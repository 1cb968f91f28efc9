import type { Session } from '../lib/store/session-store.ts';

/**
 * Whether a session that SessionStore.find returned (hard expiry already judged there) is live for the ICAP
 * decision: also not idle past its limit, judged from the DB's last_seen. The session helper refuses such a
 * session (helpers/session-lookup.ts), so Squid sends the client's traffic here; counting the session as
 * identified would let the client browse on, unnamed, instead of sending it back to the splash page.
 *
 * The DB's last_seen trails the helper's own view by at most its flush interval, and is never later, so a
 * session idle by this test is idle for the helper too; one the helper still accepts never reaches ICAP.
 */
export function liveForDecision(
  session: Pick<Session, 'lastSeen' | 'idleTimeoutMs'> | undefined,
  now: number,
): boolean {
  if (session === undefined) return false;
  return session.idleTimeoutMs === undefined || now - session.lastSeen <= session.idleTimeoutMs;
}
