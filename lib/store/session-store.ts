import type { Statement } from 'better-sqlite3';
import type { Clock } from '../clock.ts';
import { agreementUsername, type SessionLimitUpdate } from '../portal/session-limits.ts';
import type { Db } from './database.ts';
import type { SessionPage, SessionSearch } from './session-search.ts';
import {
  hardEndOf,
  type Replaced,
  type Session,
  type SessionColumns,
  type SessionKey,
  type SessionSource,
  type StartSession,
  toSession,
} from './session.ts';

type Row = SessionColumns;

const LIVE = '(expires_at IS NULL OR expires_at > @now)';

/**
 * search()'s conditions. A user name: LIKE and NOCASE fold ASCII letters only, as session-search.ts's
 * foldAscii does for PostgreSQL. A key's start: a range of the (key_kind, key) index, not LIKE (which
 * could not use it case-insensitively).
 */
const SEARCH_WHERE = {
  user: { exact: 'username = @text COLLATE NOCASE', prefix: "username LIKE @pattern ESCAPE '\\'" },
  ip: { exact: "key_kind = 'ip' AND key = @text", prefix: "key_kind = 'ip' AND key >= @text AND key < @end" },
  mac: {
    exact: "(key_kind = 'mac' AND key = @text) OR (key_kind = 'ip' AND mac = @text)",
    prefix:
      "(key_kind = 'mac' AND key >= @text AND key < @end) OR (key_kind = 'ip' AND mac >= @text AND mac < @end)",
  },
} as const;

/**
 * Ended for good: past the hard end, or idle past the limit by more than @grace, the time within which every
 * helper has written the "last seen" times it answered by (lastSeenFlushSeconds, squid.ttl): a session a
 * helper still answers for is never removed for idleness.
 */
const ENDED = `(NOT ${LIVE} OR (idle_timeout IS NOT NULL AND last_seen + idle_timeout + @grace < @now))`;

/**
 * The idle limit a save of the portal settings writes: the new one (@idle), except on a row the DB already
 * shows idle past its current limit, when the new one is longer or none: that row keeps its limit, so a
 * longer idle timeout never brings an ended session back. (The helper judges with "last seen" times it has
 * not written yet too: a row that only looks idle from here keeps the limit it had, as if nothing changed.)
 */
const IDLE_AFTER_SAVE = `CASE
  WHEN idle_timeout IS NOT NULL AND @now - last_seen > idle_timeout AND (@idle IS NULL OR @idle > idle_timeout)
  THEN idle_timeout ELSE @idle END`;

/** What a change of Device Groups did to the Usage Agreement sessions (see SessionStore.retainAgreements). */
export interface AgreementReview {
  /** Live 'agreement' sessions ended: their address is in no active group any more. */
  ended: number;
  /** Live 'agreement' sessions whose username now names another group (renamed, or an earlier one activated). */
  renamed: number;
}

/**
 * Sessions: one live identity per key. Every statement is prepared once. Safe to use from several processes
 * on one file (WAL + busy timeout, see database.ts); each write is one statement or one transaction.
 */
export class SessionStore {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #upsert: Statement<StartColumns>;
  readonly #renew: Statement<[...RenewColumns, id: number]>;
  readonly #find: Statement;
  readonly #replaced: Statement;
  readonly #end: Statement;
  readonly #list: Statement;
  readonly #clear: Statement;
  readonly #clearBySource: Statement;
  readonly #touch: Statement;
  readonly #purgeEnded: Statement;
  readonly #dataVersion: Statement;
  readonly #changeStamp: Statement;
  readonly #limitPortal: Statement;
  readonly #limitRegistrations: Statement;
  readonly #limitBindings: Statement;
  readonly #agreements: Statement;
  readonly #endById: Statement;
  readonly #rename: Statement;
  readonly #endByUser: Statement;
  readonly #countBySource: Statement;
  /** search()'s statements, one per shape of search, prepared on first use. */
  readonly #searches = new Map<string, Statement>();

  constructor(db: Db, clock: Clock) {
    this.#db = db;
    this.#clock = clock;
    // A new login on a key replaces whatever was there (REPLACE deletes the old row): the new row gets a
    // new id, so a stale "last seen" write for the previous user (keyed by id) can never land on it.
    // Positional and without RETURNING, as every login writes: the row is what was given (STRICT), so the
    // Session is made from the input (written()), which spares a login a result table and two objects.
    this.#upsert = db.prepare(
      `INSERT OR REPLACE INTO sessions
         (key_kind, key, username, source, created_at, last_seen, expires_at, idle_timeout, mac)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    // A renewal (the same user by the same way in, the session still live: startReplacing's read says so) is
    // updated in place by its id, which it keeps: a late "last seen" write for it is that user's.
    this.#renew = db.prepare(
      `UPDATE sessions SET created_at = ?, last_seen = ?, expires_at = ?, idle_timeout = ?, mac = ? WHERE id = ?`,
    );
    this.#find = db.prepare(`SELECT * FROM sessions WHERE key_kind = @kind AND key = @key AND ${LIVE}`);
    // Three columns as an array, positional (the id for a renewal in place): a login pays for this read, and
    // find()'s named binding and whole row object cost it about as much again.
    this.#replaced = db
      .prepare(
        `SELECT username, source, id FROM sessions
         WHERE key_kind = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)`,
      )
      .raw();
    this.#end = db.prepare(`DELETE FROM sessions WHERE key_kind = @kind AND key = @key RETURNING *`);
    this.#list = db.prepare(`SELECT * FROM sessions WHERE ${LIVE} ORDER BY key_kind, key`);
    this.#clear = db.prepare(`DELETE FROM sessions`);
    this.#clearBySource = db.prepare(`DELETE FROM sessions WHERE source IN (SELECT value FROM json_each(?))`);
    this.#touch = db.prepare(`UPDATE sessions SET last_seen = max(last_seen, @lastSeen) WHERE id = @id`);
    this.#purgeEnded = db.prepare(
      `DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE ${ENDED} LIMIT @limit) RETURNING *`,
    );
    this.#dataVersion = db.prepare('PRAGMA data_version').pluck();
    this.#changeStamp = db
      .prepare("SELECT (SELECT data_version FROM pragma_data_version) || ':' || total_changes()")
      .pluck();
    // Only rows still live by their hard expiry: a later date or a longer hard limit never revives a session
    // that has ended (purgeEnded removes those).
    this.#limitPortal = db.prepare(
      `UPDATE sessions SET idle_timeout = ${IDLE_AFTER_SAVE},
         expires_at = CASE WHEN @hard IS NULL THEN NULL ELSE created_at + @hard END
       WHERE source IN ('portal', 'agreement') AND ${LIVE}`,
    );
    this.#limitRegistrations = db.prepare(
      `UPDATE sessions SET expires_at = @date WHERE source = 'registration' AND key_kind = 'mac' AND ${LIVE}`,
    );
    // A binding's end is fixed (schema 6): a save may bring it forward (an earlier date; for one with a MAC, a
    // shorter limit from its start), never push it back; the binding is renewed, after a fresh look at the
    // neighbour table, with the new limits.
    this.#limitBindings = db.prepare(
      `UPDATE sessions SET idle_timeout = ${IDLE_AFTER_SAVE}, expires_at = min(expires_at,
         coalesce(@date, expires_at), CASE WHEN mac IS NULL THEN expires_at ELSE created_at + @idle END)
       WHERE source = 'registration' AND key_kind = 'ip' AND ${LIVE}`,
    );
    this.#agreements = db.prepare(
      `SELECT id, key, username FROM sessions WHERE source = 'agreement' AND key_kind = 'ip' AND ${LIVE}`,
    );
    this.#endById = db.prepare('DELETE FROM sessions WHERE id = ?');
    this.#rename = db.prepare('UPDATE sessions SET username = @username WHERE id = @id');
    this.#endByUser = db.prepare('DELETE FROM sessions WHERE username = ?');
    this.#countBySource = db
      .prepare(
        `SELECT count(*) FROM sessions WHERE source IN (SELECT value FROM json_each(@sources)) AND ${LIVE}`,
      )
      .pluck();
  }

  /** Start a session on a key, replacing any session there. */
  start(input: StartSession): Session {
    const now = this.#clock.now();
    const expiresAt = hardEndOf(input, now);
    const { lastInsertRowid } = this.#upsert.run(...startColumns(input, now, expiresAt));
    return written(Number(lastInsertRowid), input, now, expiresAt);
  }

  /**
   * start(), and who it replaced: the live session on the key, unless it was a renewal (the same user by the
   * same way in, then updated in place) or there was none. One read and one write whatever the case: a read
   * costs a login less than a write that finds nothing to do (an upsert whose DO UPDATE does not apply, an
   * UPDATE of no row: each a statement journal and, with RETURNING, a table of its own), measured. Inside a
   * transaction only (the store's group commit): the read and the write must see one state of the key.
   */
  startReplacing(input: StartSession): { session: Session; replaced: Replaced | undefined } {
    const now = this.#clock.now();
    const live = this.#replaced.get(input.key.kind, input.key.value, now) as
      [string, SessionSource, number] | undefined;
    const expiresAt = hardEndOf(input, now);
    // A renewal by replacedUnlessRenewal's rule, on the read's array: no object made for it on every login.
    if (live !== undefined && live[0] === input.username && live[1] === input.source) {
      const id = live[2];
      // The row read is there: the read and this write share the transaction (a write outside one is a bug).
      if (this.#renew.run(...renewColumns(input, now, expiresAt), id).changes !== 1)
        throw new Error(`startReplacing: session ${id} went between its read and its renewal`);
      return { session: written(id, input, now, expiresAt), replaced: undefined };
    }
    const { lastInsertRowid } = this.#upsert.run(...startColumns(input, now, expiresAt));
    const replaced = live === undefined ? undefined : { username: live[0], source: live[1] };
    return { session: written(Number(lastInsertRowid), input, now, expiresAt), replaced };
  }

  /** The live session on a key, if any. */
  find(key: SessionKey): Session | undefined {
    const row = this.#find.get({ kind: key.kind, key: key.value, now: this.#clock.now() }) as Row | undefined;
    return row === undefined ? undefined : toSession(row);
  }

  /** Who holds a live session on a key, if anyone: find() for a login that is about to replace it. */
  replaced(key: SessionKey): Replaced | undefined {
    const row = this.#replaced.get(key.kind, key.value, this.#clock.now()) as
      [string, SessionSource, number] | undefined;
    return row === undefined ? undefined : { username: row[0], source: row[1] };
  }

  /** End the session on a key. Returns the ended session (live or expired), or undefined if there was none. */
  end(key: SessionKey): Session | undefined {
    const row = this.#end.get({ kind: key.kind, key: key.value }) as Row | undefined;
    return row === undefined ? undefined : toSession(row);
  }

  list(): Session[] {
    return (this.#list.all({ now: this.#clock.now() }) as Row[]).map(toSession);
  }

  /**
   * A page of the live sessions matching a search (see session-search.ts), in key order. Walks the
   * (key_kind, key) index from the page's start and stops after limit + 1 matches: an address or MAC is a
   * range of that index; a user name is compared on each row walked (no index on it: a name that matches few
   * of a million sessions reads them all once, which SQLite does in tens of milliseconds).
   */
  search(search: SessionSearch): SessionPage {
    const after = search.after !== undefined;
    const shape = `${search.by}:${search.prefix}:${after}`;
    let statement = this.#searches.get(shape);
    if (statement === undefined) {
      statement = this.#db.prepare(
        `SELECT * FROM sessions WHERE ${LIVE} AND (${SEARCH_WHERE[search.by][search.prefix ? 'prefix' : 'exact']})
         ${after ? 'AND (key_kind, key) > (@afterKind, @afterKey)' : ''}
         ORDER BY key_kind, key LIMIT @limit`,
      );
      this.#searches.set(shape, statement);
    }
    const rows = statement.all({
      now: this.#clock.now(),
      text: search.text,
      // Every key and MAC is ASCII: this sorts after any key that starts with the text.
      end: `${search.text}\u{10FFFF}`,
      pattern: `${search.text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`,
      limit: search.limit + 1,
      ...(search.after === undefined ? {} : { afterKind: search.after.kind, afterKey: search.after.value }),
    }) as Row[];
    return { sessions: rows.slice(0, search.limit).map(toSession), more: rows.length > search.limit };
  }

  /** How many live sessions these ways in made. */
  countBySource(sources: readonly SessionSource[]): number {
    return this.#countBySource.get({ sources: JSON.stringify(sources), now: this.#clock.now() }) as number;
  }

  /** End every session of a user name (exactly as stored). Returns how many there were. */
  endByUser(username: string): number {
    return this.#endByUser.run(username).changes;
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

  /**
   * Apply a save of the portal settings to the portal's sessions that are still live (see sessionLimitUpdate
   * in lib/portal/session-limits.ts): 'portal' and 'agreement' get the new idle limit and expire at
   * created_at + the new hard limit; MAC registrations expire at the new date; their address bindings get
   * the binding idle limit and end no later than before (the date or the limit may only bring them forward). API sessions keep theirs. A limit that is now shorter ends a session at
   * once; one that is longer never revives an ended one (see IDLE_AFTER_SAVE). Returns how many sessions
   * were updated. Meant to run inside the settings save's transaction, so both are seen together.
   */
  applyPortalLimits(limits: SessionLimitUpdate): number {
    const now = this.#clock.now();
    return this.#db.transaction(
      () =>
        this.#limitPortal.run({ now, idle: limits.idleTimeoutMs, hard: limits.hardTimeoutMs }).changes +
        this.#limitRegistrations.run({ now, date: limits.registrationExpiresAt }).changes +
        this.#limitBindings.run({ now, date: limits.registrationExpiresAt, idle: limits.bindingIdleMs })
          .changes,
    )();
  }

  /**
   * After Device Groups change: each live Usage Agreement session (key kind 'ip') is kept only if
   * `groupFor(ip)` names a group (the first active group holding the address), and its username follows that
   * group's name; the others end. Meant to run inside the Device Group write's transaction.
   */
  retainAgreements(groupFor: (ip: string) => string | undefined): AgreementReview {
    return this.#db.transaction((): AgreementReview => {
      const review = { ended: 0, renamed: 0 };
      const rows = this.#agreements.all({ now: this.#clock.now() }) as Pick<Row, 'id' | 'key' | 'username'>[];
      for (const row of rows) {
        const group = groupFor(row.key);
        if (group === undefined) {
          review.ended += this.#endById.run(row.id).changes;
        } else if (row.username !== agreementUsername(group)) {
          review.renamed += this.#rename.run({ id: row.id, username: agreementUsername(group) }).changes;
        }
      }
      return review;
    })();
  }

  /** Record "last seen" times in one transaction (a helper batches them instead of writing per lookup). */
  touch(seen: ReadonlyMap<number, number>): void {
    if (seen.size === 0) return;
    this.#db.transaction(() => {
      for (const [id, lastSeen] of seen) this.#touch.run({ id, lastSeen });
    })();
  }

  /**
   * Delete ended sessions, at most `limit`: past their hard end, or unseen for longer than their idle limit
   * plus `idleGraceMs` (a helper's latest sightings reach the DB only at its next flush: see ENDED). The rows
   * as they were, for the audit trail's expiries.
   */
  purgeEnded(limit: number, idleGraceMs: number): Session[] {
    const rows = this.#purgeEnded.all({ now: this.#clock.now(), limit, grace: idleGraceMs }) as Row[];
    return rows.map(toSession);
  }

  /**
   * Changes whenever another connection commits (PRAGMA data_version): a reader keeps answers cached until
   * this moves, which costs one cheap pragma per batch of lookups instead of one query per lookup.
   */
  dataVersion(): number {
    return this.#dataVersion.get() as number;
  }

  /**
   * Like dataVersion(), but it also moves when THIS connection writes (total_changes()): for a reader in
   * the same process as writers on the same handle (doorman serve's ICAP decision beside its login API and
   * splash page), which data_version alone would not tell. One statement.
   */
  changeStamp(): string {
    return this.#changeStamp.get() as string;
  }
}

/** #upsert's parameters, in its order (better-sqlite3 takes ?NNN for a name: `now` is given twice). */
type StartColumns = [
  kind: string,
  key: string,
  username: string,
  source: string,
  createdAt: number,
  lastSeen: number,
  expiresAt: number | null,
  idleTimeout: number | null,
  mac: string | null,
];
const startColumns = (input: StartSession, now: number, expiresAt: number | undefined): StartColumns => [
  input.key.kind,
  input.key.value,
  input.username,
  input.source,
  now,
  now,
  expiresAt ?? null,
  input.idleTimeoutMs ?? null,
  input.mac ?? null,
];

/** #renew's, before the id. */
type RenewColumns = [
  createdAt: number,
  lastSeen: number,
  expiresAt: number | null,
  idleTimeout: number | null,
  mac: string | null,
];
const renewColumns = (input: StartSession, now: number, expiresAt: number | undefined): RenewColumns => [
  now,
  now,
  expiresAt ?? null,
  input.idleTimeoutMs ?? null,
  input.mac ?? null,
];

/** The session a start wrote, as toSession would read it back: a STRICT table stores what it was given. */
const written = (id: number, input: StartSession, now: number, expiresAt: number | undefined): Session => ({
  id,
  key: { kind: input.key.kind, value: input.key.value },
  username: input.username,
  source: input.source,
  createdAt: now,
  lastSeen: now,
  expiresAt,
  idleTimeoutMs: input.idleTimeoutMs,
  ...(input.mac === undefined ? {} : { mac: input.mac }),
});
