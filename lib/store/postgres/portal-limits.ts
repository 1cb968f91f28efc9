import type { SessionLimitUpdate } from '../../portal/session-limits.ts';
import type { Tx } from './connect.ts';

/**
 * A save of the portal settings applied to the portal's live sessions, on PostgreSQL: what
 * SessionStore.applyPortalLimits does on SQLite, statement for statement (see there and
 * lib/portal/session-limits.ts), each row it changes stamped with the sessions change number `change` (taken
 * after the settings': see write.ts), so every box's copy follows. Returns how many sessions were updated.
 *
 * Two spellings differ from SQLite's: parameters carry their type (PostgreSQL cannot infer one for
 * `$1 IS NULL`), and SQLite's min() is NULL when any argument is, where least() skips NULLs, so an address
 * binding without an end keeps none.
 */
export async function applyPortalLimits(
  tx: Tx,
  limits: SessionLimitUpdate,
  context: { change: number; now: number },
): Promise<number> {
  const { change, now } = context;
  const live = () => tx`(expires_at IS NULL OR expires_at > ${now}::bigint)`;
  /**
   * The idle limit a save writes: the new one, except on a row already idle past its current limit by what
   * the table knows, when the new one is longer or none: a longer idle timeout never brings an ended
   * session back (SessionStore's IDLE_AFTER_SAVE).
   */
  const idleAfterSave = (idle: number | null) => tx`CASE
    WHEN idle_timeout IS NOT NULL AND ${now}::bigint - last_seen > idle_timeout
      AND (${idle}::bigint IS NULL OR ${idle}::bigint > idle_timeout)
    THEN idle_timeout ELSE ${idle}::bigint END`;
  const date = limits.registrationExpiresAt;
  const bindingIdle = limits.bindingIdleMs;
  const portal = await tx`
    UPDATE sessions SET idle_timeout = ${idleAfterSave(limits.idleTimeoutMs)},
      expires_at = CASE WHEN ${limits.hardTimeoutMs}::bigint IS NULL THEN NULL
        ELSE created_at + ${limits.hardTimeoutMs}::bigint END,
      change = ${change}
    WHERE source IN ('portal', 'agreement') AND ${live()}`;
  const registrations = await tx`
    UPDATE sessions SET expires_at = ${date}::bigint, change = ${change}
    WHERE source = 'registration' AND key_kind = 'mac' AND ${live()}`;
  // A binding's end is fixed: a save may bring it forward (an earlier date; for one with a MAC, a shorter
  // limit from its start), never push it back.
  const bindings = await tx`
    UPDATE sessions SET idle_timeout = ${idleAfterSave(bindingIdle)},
      expires_at = CASE WHEN expires_at IS NULL THEN NULL ELSE least(expires_at,
        coalesce(${date}::bigint, expires_at),
        CASE WHEN mac IS NULL THEN expires_at ELSE created_at + ${bindingIdle}::bigint END) END,
      change = ${change}
    WHERE source = 'registration' AND key_kind = 'ip' AND ${live()}`;
  return portal.count + registrations.count + bindings.count;
}
