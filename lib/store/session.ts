/**
 * A session as both engines keep it (SQLite: lib/store/session-store.ts; PostgreSQL: lib/store/postgres/): one
 * live identity per key, an IP address or a MAC address. The types, the row both store, and the rules they
 * share.
 */

export const SessionSources = ['api', 'portal', 'registration', 'agreement'] as const;
export type SessionSource = (typeof SessionSources)[number];
export type KeyKind = 'ip' | 'mac';

/** What a session is tied to: a normalised IP address or MAC address (see net/address.ts). */
export interface SessionKey {
  kind: KeyKind;
  value: string;
}

export interface Session {
  id: number;
  key: SessionKey;
  username: string;
  source: SessionSource;
  createdAt: number;
  lastSeen: number;
  /** Hard expiry, ms since the epoch; undefined means none. */
  expiresAt: number | undefined;
  /**
   * Idle limit, ms: the session ends once it has not been seen for longer than this; undefined means none.
   * Judged by the session helper (see helpers/session-lookup.ts), which knows more recent "last seen" times
   * than `lastSeen` here: find() and list() still return a session that looks idle from the DB alone.
   */
  idleTimeoutMs: number | undefined;
  /**
   * An address binding's device (lib/portal/address-binding.ts): the MAC of the registration it was made
   * for, normaliseMac form. Absent on every other session, and on bindings made before schema 6.
   */
  mac?: string;
}

/** Who held a key before a login replaced it: what the login's audit event and counts need of that session. */
export type Replaced = Pick<Session, 'username' | 'source'>;

/**
 * What a start replaced, as SessionRepository.start tells it: the live session the write found on the key,
 * unless it was the same user by the same way in (a renewal, not a replacement).
 */
export const replacedUnlessRenewal = (
  input: Pick<StartSession, 'username' | 'source'>,
  previous: Replaced | undefined,
): Replaced | undefined =>
  previous !== undefined && previous.username === input.username && previous.source === input.source
    ? undefined
    : previous;

export interface StartSession {
  key: SessionKey;
  username: string;
  source: SessionSource;
  expiresAt?: number;
  /** A whole number of ms, at least 1. */
  idleTimeoutMs?: number;
  /** See Session.mac. */
  mac?: string;
  /**
   * Ms: the session ends this long after it starts at the latest, whatever its traffic (expires_at is the
   * earlier of expiresAt and start + this). An address binding's fixed end.
   */
  lifetimeMs?: number;
}

/** The hard end a session starting at `now` gets: the earlier of its expiry and its lifetime's end (both engines). */
export function hardEndOf(input: StartSession, now: number): number | undefined {
  const lifetimeEnd = input.lifetimeMs === undefined ? undefined : now + input.lifetimeMs;
  return lifetimeEnd === undefined ? input.expiresAt : Math.min(input.expiresAt ?? lifetimeEnd, lifetimeEnd);
}

/** A sessions row as both engines store it (times in ms; NULL for none). */
export interface SessionColumns {
  id: number;
  key_kind: KeyKind;
  key: string;
  username: string;
  source: SessionSource;
  created_at: number;
  last_seen: number;
  expires_at: number | null;
  idle_timeout: number | null;
  mac: string | null;
}

/** The Session a row stands for (the same on both engines). */
export const toSession = (r: SessionColumns): Session => ({
  id: r.id,
  key: { kind: r.key_kind, value: r.key },
  username: r.username,
  source: r.source,
  createdAt: r.created_at,
  lastSeen: r.last_seen,
  expiresAt: r.expires_at ?? undefined,
  idleTimeoutMs: r.idle_timeout ?? undefined,
  ...(r.mac === null ? {} : { mac: r.mac }),
});

/**
 * How long past its idle limit an idle session is removed (and its expiry recorded): beyond the time within
 * which every helper has written what it answered by (lastSeenFlushSeconds and squid.ttl, twice over), plus a
 * minute for a write under way.
 */
export const idleGraceMs = (leastIdleSeconds: number): number => leastIdleSeconds * 1000 + 60_000;
