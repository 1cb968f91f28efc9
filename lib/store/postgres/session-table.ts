import type { Session, SessionKey, SessionSource } from '../session-store.ts';

/** A sessions row as PostgreSQL returns it (times as numbers, see connect.ts). */
export interface SessionRow {
  id: number;
  key_kind: 'ip' | 'mac';
  key: string;
  username: string;
  source: SessionSource;
  created_at: number;
  last_seen: number;
  expires_at: number | null;
  idle_timeout: number | null;
  mac: string | null;
  change: number;
}

interface Entry {
  session: Session;
  /** The change number that wrote this version: an older version never replaces a newer one. */
  change: number;
}

const keyOf = (key: SessionKey): string => `${key.kind}:${key.value}`;

export const toSession = (r: SessionRow): Session => ({
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
 * The sessions as this process knows them: by key for lookups, by id for deletions and "last seen". Pure
 * (no I/O, no clock): the replica and the repository feed it rows and deletions. Rows arrive from two sides
 * (a delta, and this process's own writes applied at once), so each entry keeps the change number that wrote
 * it and a row never replaces a newer one.
 */
export class SessionTable {
  readonly #byKey = new Map<string, Entry>();
  readonly #keyById = new Map<number, string>();

  get size(): number {
    return this.#byKey.size;
  }

  /** Forget everything and hold `rows` (a full load). */
  replace(rows: Iterable<SessionRow>): void {
    this.#byKey.clear();
    this.#keyById.clear();
    for (const row of rows) this.put(row);
  }

  /** Hold this version of a row unless a newer one is held. */
  put(row: SessionRow): void {
    const session = toSession(row);
    const key = keyOf(session.key);
    const held = this.#byKey.get(key);
    if (held !== undefined) {
      if (held.change > row.change) return;
      if (held.session.id !== session.id) this.#keyById.delete(held.session.id);
    }
    this.#byKey.set(key, { session, change: row.change });
    this.#keyById.set(session.id, key);
  }

  /** The session of this id is gone (ended, expired, cleared). */
  remove(id: number): void {
    const key = this.#keyById.get(id);
    if (key === undefined) return;
    this.#keyById.delete(id);
    if (this.#byKey.get(key)?.session.id === id) this.#byKey.delete(key);
  }

  /** The session on a key before its hard expiry, if any. */
  find(key: SessionKey, now: number): Session | undefined {
    const session = this.#byKey.get(keyOf(key))?.session;
    if (session === undefined) return undefined;
    return session.expiresAt !== undefined && session.expiresAt <= now ? undefined : session;
  }

  /** Every session before its hard expiry, by key kind then key (the SQLite store's order). */
  list(now: number): Session[] {
    const live: Session[] = [];
    for (const { session } of this.#byKey.values()) {
      if (session.expiresAt === undefined || session.expiresAt > now) live.push(session);
    }
    return live.sort((a, b) =>
      a.key.kind === b.key.kind ? compare(a.key.value, b.key.value) : compare(a.key.kind, b.key.kind),
    );
  }
}

/** Byte order, as SQLite's BINARY collation sorts ASCII keys. */
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
