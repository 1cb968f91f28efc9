import type { ReadAt } from './replica.ts';
import type { SessionRow, SessionTable } from './session-table.ts';

/**
 * Rows and deleted ids held at most: the writes of four seconds at the 50,000 logins/s issue 15 measured, more
 * than a full load of a million takes on the bench (2.5 to 3.9 s, bench/README); about 44 MB of row objects
 * (some 220 bytes each for an IPv4 login, measured), a deleted id 8.
 */
export const OWN_WRITES_HELD = 200_000;

interface OwnWrite {
  change: number;
  /** Replica.reads() when it committed: reads numbered up to this one may lack it. */
  read: number;
  rows: readonly SessionRow[];
  deleted: readonly number[];
}

/**
 * This process's session writes, applied to its copy at once (read-your-writes) and kept until its replica has
 * read past them. A catch-up read whose snapshot was taken before such a write, applied after it, would undo
 * it: a delta holding the session's row as it was before a logout brings the session back; a full load puts
 * in place a table without the logins made while it ran. Each stays so until the next catch-up (ms, but real).
 * So once a read is applied, the writes it may lack are applied again on top. Twice is safe: a newer change
 * wins in SessionTable.put, and an id deleted never comes back (ids are never reused, schema.ts).
 *
 * Held only until the first read applied that began after the write committed (tens of ms: the write's own
 * notification starts one), never for the life of a session: the rows and deleted ids the write had anyway,
 * no copy, nothing per session in the table. And at most `limit` rows and ids (OWN_WRITES_HELD): past it the
 * oldest are let go, and for those the copy is as it was without this (right again at the next catch-up).
 * Reached only when a box's reads stall well past a full load's time while its writes commit fast (reads
 * that time out again and again), where holding them all would grow without end.
 */
export class OwnWrites {
  #writes: OwnWrite[] = [];
  /** Rows and deleted ids held. */
  #held = 0;
  readonly #limit: number;

  constructor(limit = OWN_WRITES_HELD) {
    this.#limit = limit;
  }

  /** A write committed (change numbers rise from one to the next) while `read` was the latest read begun. */
  record(change: number, read: number, rows: readonly SessionRow[], deleted: readonly number[]): void {
    if (rows.length === 0 && deleted.length === 0) return;
    this.#writes.push({ change, read, rows, deleted });
    this.#held += rows.length + deleted.length;
    // The newest is kept even alone past the limit (a clear's ids: the array its write made anyway).
    while (this.#held > this.#limit && this.#writes.length > 1) this.#held -= weight(this.#writes.shift());
  }

  /** How many writes are held (for tests). */
  get size(): number {
    return this.#writes.length;
  }

  /** How many rows and deleted ids are held. */
  get held(): number {
    return this.#held;
  }

  /** `read` has just been applied to `table`: apply again on top the writes it may lack; forget the others. */
  replay(table: SessionTable, read: ReadAt): void {
    // Committed before the read began, or at a change its snapshot holds: the read has it. (On another server,
    // a failover's, that lost it: the read is the truth, as a full load after a failover is.)
    this.#writes = this.#writes.filter((w) => w.read >= read.seq && w.change > read.last);
    this.#held = this.#writes.reduce((sum, w) => sum + weight(w), 0);
    for (const write of this.#writes) {
      for (const id of write.deleted) table.remove(id);
      for (const row of write.rows) table.put(row);
    }
  }
}

const weight = (write: OwnWrite | undefined): number =>
  write === undefined ? 0 : write.rows.length + write.deleted.length;
