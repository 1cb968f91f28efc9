import type { Statement } from 'better-sqlite3';
import type { Clock } from '../clock.ts';
import type { Db } from './database.ts';

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
}

export interface StartSession {
  key: SessionKey;
  username: string;
  source: SessionSource;
  expiresAt?: number;
  /** A whole number of ms, at least 1. */
  idleTimeoutMs?: number;
}

interface Row {
  id: number;
  key_kind: KeyKind;
  key: string;
  username: string;
  source: SessionSource;
  created_at: number;
  last_seen: number;
  expires_at: number | null;
  idle_timeout: number | null;
}

const toSession = (r: Row): Session => ({
  id: r.id,
  key: { kind: r.key_kind, value: r.key },
  username: r.username,
  source: r.source,
  createdAt: r.created_at,
  lastSeen: r.last_seen,
  expiresAt: r.expires_at ?? undefined,
  idleTimeoutMs: r.idle_timeout ?? undefined,
});

const LIVE = '(expires_at IS NULL OR expires_at > @now)';

/**
 * Sessions: one live identity per key. Every statement is prepared once. Safe to use from several processes
 * on one file (WAL + busy timeout, see database.ts); each write is one statement or one transaction.
 */
export class SessionStore {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #upsert: Statement;
  readonly #find: Statement;
  readonly #end: Statement;
  readonly #list: Statement;
  readonly #clear: Statement;
  readonly #clearBySource: Statement;
  readonly #touch: Statement;
  readonly #purge: Statement;
  readonly #dataVersion: Statement;

  constructor(db: Db, clock: Clock) {
    this.#db = db;
    this.#clock = clock;
    // A new login on a key replaces whatever was there (REPLACE deletes the old row): the new row gets a
    // new id, so a stale "last seen" write for the previous user (keyed by id) can never land on it.
    this.#upsert = db.prepare(
      `INSERT OR REPLACE INTO sessions
         (key_kind, key, username, source, created_at, last_seen, expires_at, idle_timeout)
       VALUES (@kind, @key, @username, @source, @now, @now, @expiresAt, @idleTimeout)
       RETURNING *`,
    );
    this.#find = db.prepare(`SELECT * FROM sessions WHERE key_kind = @kind AND key = @key AND ${LIVE}`);
    this.#end = db.prepare(`DELETE FROM sessions WHERE key_kind = @kind AND key = @key RETURNING *`);
    this.#list = db.prepare(`SELECT * FROM sessions WHERE ${LIVE} ORDER BY key_kind, key`);
    this.#clear = db.prepare(`DELETE FROM sessions`);
    this.#clearBySource = db.prepare(`DELETE FROM sessions WHERE source IN (SELECT value FROM json_each(?))`);
    this.#touch = db.prepare(`UPDATE sessions SET last_seen = max(last_seen, @lastSeen) WHERE id = @id`);
    this.#purge = db.prepare(`DELETE FROM sessions WHERE NOT ${LIVE}`);
    this.#dataVersion = db.prepare('PRAGMA data_version').pluck();
  }

  /** Start a session on a key, replacing any session there. */
  start(input: StartSession): Session {
    const row = this.#upsert.get({
      kind: input.key.kind,
      key: input.key.value,
      username: input.username,
      source: input.source,
      now: this.#clock.now(),
      expiresAt: input.expiresAt ?? null,
      idleTimeout: input.idleTimeoutMs ?? null,
    }) as Row;
    return toSession(row);
  }

  /** The live session on a key, if any. */
  find(key: SessionKey): Session | undefined {
    const row = this.#find.get({ kind: key.kind, key: key.value, now: this.#clock.now() }) as Row | undefined;
    return row === undefined ? undefined : toSession(row);
  }

  /** End the session on a key. Returns the ended session (live or expired), or undefined if there was none. */
  end(key: SessionKey): Session | undefined {
    const row = this.#end.get({ kind: key.kind, key: key.value }) as Row | undefined;
    return row === undefined ? undefined : toSession(row);
  }

  list(): Session[] {
    return (this.#list.all({ now: this.#clock.now() }) as Row[]).map(toSession);
  }

  /** End every session. Returns how many there were. */
  clear(): number {
    return this.#clear.run().changes;
  }

  /**
   * End every session made by these ways in (the portal's Clear current sessions: 'portal', 'registration',
   * 'agreement'; API sessions stay). Returns how many there were.
   */
  endBySource(sources: readonly SessionSource[]): number {
    return this.#clearBySource.run(JSON.stringify(sources)).changes;
  }

  /** Record "last seen" times in one transaction (a helper batches them instead of writing per lookup). */
  touch(seen: ReadonlyMap<number, number>): void {
    if (seen.size === 0) return;
    this.#db.transaction(() => {
      for (const [id, lastSeen] of seen) this.#touch.run({ id, lastSeen });
    })();
  }

  /** Delete sessions past their hard expiry. Returns how many. */
  purgeExpired(): number {
    return this.#purge.run({ now: this.#clock.now() }).changes;
  }

  /**
   * Changes whenever another connection commits (PRAGMA data_version): a reader keeps answers cached until
   * this moves, which costs one cheap pragma per batch of lookups instead of one query per lookup.
   */
  dataVersion(): number {
    return this.#dataVersion.get() as number;
  }
}
