import type { Session } from '../store/session.ts';
import type { AuditInput, ExpiryReason } from './event.ts';

/**
 * Why an ended session ended, and when: whichever of its ends came first. A MAC registration's hard end is
 * the registration date (`date`); any other hard end is its lifetime's (`hard`); an idle limit counts from
 * the last time any helper had written that it was seen.
 */
export function expiryOf(session: Session): { reason: ExpiryReason; at: number } {
  const idleEnd = session.idleTimeoutMs === undefined ? undefined : session.lastSeen + session.idleTimeoutMs;
  const hardEnd = session.expiresAt;
  if (idleEnd !== undefined && (hardEnd === undefined || idleEnd < hardEnd))
    return { reason: 'idle', at: idleEnd };
  const reason = session.source === 'registration' && session.key.kind === 'mac' ? 'date' : 'hard';
  return { reason, at: hardEnd ?? session.lastSeen };
}

/**
 * session.expired for sessions the purge removed: recorded by whichever box's purge deleted the row, in the
 * transaction that deleted it, so once per session whatever the number of boxes. `at` is when it ended.
 */
export function expiryEvents(sessions: readonly Session[]): AuditInput[] {
  return sessions.map((session) => {
    const { reason, at } = expiryOf(session);
    return {
      kind: 'session.expired',
      actor: 'system',
      user: session.username,
      ...(session.key.kind === 'ip' ? { address: session.key.value } : {}),
      at,
      detail: {
        reason,
        source: session.source,
        ...(session.key.kind === 'mac' ? { mac: session.key.value } : {}),
        started: new Date(session.createdAt).toISOString(),
      },
    };
  });
}
