import { randomInt } from 'node:crypto';
import {
  SessionSources,
  type Session,
  type SessionColumns,
  type SessionKey,
  type SessionSource,
} from '../session.ts';
import {
  CHANGE,
  CREATED_AT,
  EXPIRES_AT,
  FLAGS,
  ID,
  IDLE_TIMEOUT,
  KEY_HASH,
  KIND,
  LAST_SEEN,
  SessionSlots,
  SOURCE_MASK,
  SOURCE_SHIFT,
} from './session-slots.ts';
import { hashBytes, hashInteger, SlotIndex } from './slot-index.ts';
import { Scratch } from './string-arena.ts';

/** A sessions row as PostgreSQL returns it (times as numbers, see connect.ts), with its change number. */
export interface SessionRow extends SessionColumns {
  change: number;
}

/** Key kinds as slots hold them (0: a free slot). */
const IP = 1;
const MAC = 2;

const sourceIndex = new Map<string, number>(SessionSources.map((s, i) => [s, i]));
const orUndefined = (value: number): number | undefined => (value === value ? value : undefined);

/**
 * The sessions as this process knows them: by key for lookups, by id for deletions and "last seen". Pure
 * (no I/O, no clock): the replica and the repository feed it rows and deletions. Rows arrive from two sides
 * (a delta, and this process's own writes applied at once), so each keeps the change number that wrote it
 * and a row never replaces a newer one.
 *
 * Outside V8's heap, so that a million sessions fit in authd's 300 MB (issue 15): a row is a slot of
 * SessionSlots (its numbers and, most often, its key and user bytes), found through two SlotIndexes (by kind
 * and key bytes; by id). About 134 bytes a session where objects, strings and Maps took 267 (bench/README
 * §10). And V8's heap stays small, so its collector keeps it small: a heap sized to a quarter of a gigabyte
 * of live rows let hundreds of megabytes of garbage (every "last seen" read back made a new row) pile up
 * between collections. A row already held is updated in place: a "last seen" writes numbers and compares the
 * strings, copying none. A Session is made only for an answer.
 */
export class SessionTable {
  readonly #slots = new SessionSlots();
  readonly #scratch = new Scratch();
  readonly #byKey = new SlotIndex();
  readonly #byId = new SlotIndex();
  /**
   * The key hash's secret key, drawn for each table: keys are outside input (a client picks its IPv6 address
   * among 2^64), and with a hash anyone can compute an outsider could choose addresses that share a cell and
   * make each lookup walk them all. Ids come from PostgreSQL's sequence: their hash needs no secret.
   */
  readonly #k0: number;
  readonly #k1: number;
  #size = 0;
  /** What #isKey and #isId compare with (set before each search: no closure made per lookup). */
  #wantKind = 0;
  #wantHash = 0;
  #wantLength = 0;
  #wantId = 0;

  readonly #isKey = (slot: number): boolean => {
    const slots = this.#slots;
    return (
      (slots.u32(slot, FLAGS) & KIND) === this.#wantKind &&
      slots.keyLength(slot) === this.#wantLength &&
      slots.textEquals(slot, 0, this.#wantLength, this.#scratch.bytes)
    );
  };

  readonly #isId = (slot: number): boolean => this.#slots.f64(slot, ID) === this.#wantId;

  /** `key`: the key hash's (two 32-bit words), random unless a test needs one. */
  constructor(key: readonly [number, number] = [randomInt(2 ** 32), randomInt(2 ** 32)]) {
    this.#k0 = key[0] | 0;
    this.#k1 = key[1] | 0;
  }

  get size(): number {
    return this.#size;
  }

  /**
   * How it is held: slots ever used (freed ones are reused), the arena's bytes in use and garbage, and the
   * most index cells a lookup by key reads (a walk over the whole index: for tests and the bench).
   */
  stats(): { slots: number; arenaBytes: number; arenaGarbage: number; longestKeyProbe: number } {
    const arena = this.#slots.arena();
    return {
      slots: this.#slots.end,
      arenaBytes: arena.live,
      arenaGarbage: arena.garbage,
      longestKeyProbe: this.#byKey.longestProbe(),
    };
  }

  /** Hold this version of a row unless a newer one is held (on its key, or under its id on another key). */
  put(row: SessionRow): void {
    const source = sourceIndex.get(row.source);
    if (source === undefined)
      throw new Error(`session ${row.id}: unknown source ${JSON.stringify(row.source)}`);
    const slots = this.#slots;
    const kind = row.key_kind === 'ip' ? IP : MAC;
    const held = this.#findKey(kind, row.key);
    if (held >= 0 && slots.f64(held, CHANGE) > row.change) return;
    const sameId = this.#findId(row.id);
    if (sameId >= 0 && sameId !== held) {
      // This id on another key (a row that moved): the newer of the two stands.
      if (slots.f64(sameId, CHANGE) > row.change) return;
      this.#release(sameId);
    }
    const keyLength = this.#wantLength;
    const hash = this.#wantHash;
    // The key's bytes are at the start of the scratch buffer (#findKey): the user's go after them.
    const bytes = this.#scratch;
    const userLength = bytes.encode(row.username, keyLength);
    let slot = held;
    if (slot < 0) {
      slot = slots.allocate();
      this.#size += 1;
      slots.setKeyHash(slot, hash);
      slots.setF64(slot, ID, row.id);
      slots.setText(slot, bytes.bytes, keyLength, userLength);
      slots.setFlags(slot, kind);
      this.#byKey.insert(hash, slot);
      this.#byId.insert(hashInteger(row.id), slot);
    } else {
      const id = slots.f64(slot, ID);
      if (id !== row.id) {
        // A new login on the key: a new id (schema.ts); the one it replaces is no longer found by id.
        this.#byId.delete(hashInteger(id), slot);
        slots.setF64(slot, ID, row.id);
        this.#byId.insert(hashInteger(row.id), slot);
      }
      // The key's bytes are the same (it was found by them): only the user may differ.
      if (
        slots.userLength(slot) !== userLength ||
        !slots.textEquals(slot, keyLength, userLength, bytes.bytes, keyLength)
      )
        slots.setText(slot, bytes.bytes, keyLength, userLength);
    }
    slots.setF64(slot, CHANGE, row.change);
    slots.setF64(slot, CREATED_AT, row.created_at);
    slots.setF64(slot, LAST_SEEN, row.last_seen);
    slots.setF64(slot, EXPIRES_AT, row.expires_at ?? NaN);
    slots.setF64(slot, IDLE_TIMEOUT, row.idle_timeout ?? NaN);
    if (row.mac === null) slots.setMac(slot, undefined, 0);
    else {
      // Encoded first: a MAC longer than the scratch holds grows it, and the bytes are then in the new buffer.
      const macLength = bytes.encode(row.mac);
      slots.setMac(slot, bytes.bytes, macLength);
    }
    slots.setFlags(slot, kind | (source << SOURCE_SHIFT));
    slots.compactIfWorth();
  }

  /** The session of this id is gone (ended, expired, cleared). */
  remove(id: number): void {
    const slot = this.#findId(id);
    if (slot >= 0) this.#release(slot);
  }

  /** The session on a key before its hard expiry, if any. */
  find(key: SessionKey, now: number): Session | undefined {
    const slot = this.#findKey(key.kind === 'ip' ? IP : MAC, key.value);
    // NaN (no hard end) is never <= now
    if (slot < 0 || this.#slots.f64(slot, EXPIRES_AT) <= now) return undefined;
    return this.#session(slot, key.value);
  }

  /** Every session before its hard expiry, in no order (a search's scan: nothing sorted, one at a time). */
  *live(now: number): Generator<Session> {
    const slots = this.#slots;
    for (let slot = 0; slot < slots.end; slot++) {
      // NaN (no hard end) is never <= now
      if ((slots.u32(slot, FLAGS) & KIND) !== 0 && !(slots.f64(slot, EXPIRES_AT) <= now))
        yield this.#session(slot, slots.key(slot));
    }
  }

  /** How many sessions before their hard expiry came in by these ways, read from the slots (no Session made). */
  countBySource(sources: readonly SessionSource[], now: number): number {
    let wanted = 0;
    for (const source of sources) wanted |= 1 << (sourceIndex.get(source) ?? 31);
    const slots = this.#slots;
    let count = 0;
    for (let slot = 0; slot < slots.end; slot++) {
      const flags = slots.u32(slot, FLAGS);
      if (
        (flags & KIND) !== 0 &&
        (wanted & (1 << ((flags >>> SOURCE_SHIFT) & SOURCE_MASK))) !== 0 &&
        !(slots.f64(slot, EXPIRES_AT) <= now)
      )
        count += 1;
    }
    return count;
  }

  /** Every session before its hard expiry, by key kind then key (the SQLite store's order). */
  list(now: number): Session[] {
    const slots = this.#slots;
    const live: Session[] = [];
    for (const kind of [IP, MAC]) {
      const keyed: Array<{ key: string; slot: number }> = [];
      for (let slot = 0; slot < slots.end; slot++) {
        if ((slots.u32(slot, FLAGS) & KIND) === kind && !(slots.f64(slot, EXPIRES_AT) <= now))
          keyed.push({ key: slots.key(slot), slot });
      }
      keyed.sort((a, b) => compare(a.key, b.key));
      for (const { key, slot } of keyed) live.push(this.#session(slot, key));
    }
    return live;
  }

  #session(slot: number, key: string): Session {
    const slots = this.#slots;
    const flags = slots.u32(slot, FLAGS);
    const mac = slots.mac(slot);
    return {
      id: slots.f64(slot, ID),
      key: { kind: (flags & KIND) === IP ? 'ip' : 'mac', value: key },
      username: slots.user(slot),
      source: SessionSources[(flags >>> SOURCE_SHIFT) & SOURCE_MASK] ?? 'api',
      createdAt: slots.f64(slot, CREATED_AT),
      lastSeen: slots.f64(slot, LAST_SEEN),
      expiresAt: orUndefined(slots.f64(slot, EXPIRES_AT)),
      idleTimeoutMs: orUndefined(slots.f64(slot, IDLE_TIMEOUT)),
      ...(mac === undefined ? {} : { mac }),
    };
  }

  /** The slot holding this key, or -1; its bytes stay at the start of #scratch, their length and hash in #want*. */
  #findKey(kind: number, key: string): number {
    this.#wantKind = kind;
    this.#wantLength = this.#scratch.encode(key);
    this.#wantHash = hashBytes(this.#scratch.bytes, this.#wantLength, this.#k0 ^ kind, this.#k1);
    return this.#byKey.find(this.#wantHash, this.#isKey);
  }

  #findId(id: number): number {
    this.#wantId = id;
    return this.#byId.find(hashInteger(id), this.#isId);
  }

  #release(slot: number): void {
    this.#byKey.delete(this.#slots.u32(slot, KEY_HASH) | 0, slot);
    this.#byId.delete(hashInteger(this.#slots.f64(slot, ID)), slot);
    this.#slots.release(slot);
    this.#size -= 1;
  }
}

/** Byte order, as SQLite's BINARY collation sorts ASCII keys. */
const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
