import {
  SessionSources,
  toSession,
  type Session,
  type SessionColumns,
  type SessionKey,
  type SessionSource,
} from '../session-store.ts';

/** A sessions row as PostgreSQL returns it (times as numbers, see connect.ts), with its change number. */
export interface SessionRow extends SessionColumns {
  change: number;
}

/**
 * The few strings every row repeats, one copy each: the driver makes a new string per row and column, which
 * at a million sessions is tens of megabytes of "api".
 */
const SOURCES = new Map<string, SessionSource>(SessionSources.map((s) => [s, s]));

/**
 * A row as held: a new object of one fixed shape (every field in the object itself, in one order), not the
 * driver's row, which is built field by field and costs half as much again; the repeated strings interned.
 */
const compact = (row: SessionRow): SessionRow => ({
  id: row.id,
  key_kind: row.key_kind === 'ip' ? 'ip' : 'mac',
  key: row.key,
  username: row.username,
  source: SOURCES.get(row.source) ?? row.source,
  created_at: row.created_at,
  last_seen: row.last_seen,
  expires_at: row.expires_at,
  idle_timeout: row.idle_timeout,
  mac: row.mac,
  change: row.change,
});

/**
 * The sessions as this process knows them: by key for lookups, by id for deletions and "last seen". Pure
 * (no I/O, no clock): the replica and the repository feed it rows and deletions. Rows arrive from two sides
 * (a delta, and this process's own writes applied at once), so each keeps the change number that wrote it
 * and a row never replaces a newer one. The rows are held as read (one flat object each, no key strings of
 * our own: a map per key kind), and a Session is made only for an answer: a million sessions fit in about
 * 200 MB.
 */
export class SessionTable {
  readonly #byKind = { ip: new Map<string, SessionRow>(), mac: new Map<string, SessionRow>() };
  readonly #byId = new Map<number, SessionRow>();

  get size(): number {
    return this.#byId.size;
  }

  /** Hold this version of a row unless a newer one is held. */
  put(row: SessionRow): void {
    const byKey = this.#byKind[row.key_kind];
    const held = byKey.get(row.key);
    if (held !== undefined) {
      if (held.change > row.change) return;
      if (held.id !== row.id) this.#byId.delete(held.id);
    }
    const kept = compact(row);
    byKey.set(kept.key, kept);
    this.#byId.set(kept.id, kept);
  }

  /** The session of this id is gone (ended, expired, cleared). */
  remove(id: number): void {
    const row = this.#byId.get(id);
    if (row === undefined) return;
    this.#byId.delete(id);
    const byKey = this.#byKind[row.key_kind];
    if (byKey.get(row.key)?.id === id) byKey.delete(row.key);
  }

  /** The session on a key before its hard expiry, if any. */
  find(key: SessionKey, now: number): Session | undefined {
    const row = this.#byKind[key.kind].get(key.value);
    if (row === undefined || (row.expires_at !== null && row.expires_at <= now)) return undefined;
    return toSession(row);
  }

  /** Every session before its hard expiry, in no order (a search's scan: nothing sorted, one at a time). */
  *live(now: number): Generator<Session> {
    for (const row of this.#byId.values()) {
      if (row.expires_at === null || row.expires_at > now) yield toSession(row);
    }
  }

  /** Every session before its hard expiry, by key kind then key (the SQLite store's order). */
  list(now: number): Session[] {
    const live: Session[] = [];
    for (const kind of ['ip', 'mac'] as const) {
      const keys = [...this.#byKind[kind].keys()].sort(compare);
      for (const key of keys) {
        const row = this.#byKind[kind].get(key);
        if (row !== undefined && (row.expires_at === null || row.expires_at > now)) live.push(toSession(row));
      }
    }
    return live;
  }
}

/** Byte order, as SQLite's BINARY collation sorts ASCII keys. */
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
