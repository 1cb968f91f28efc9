import { systemClock, type Clock } from '../../clock.ts';
import { DoormanError } from '../../errors.ts';
import type { Log } from '../../log.ts';
import { parseChange } from './changes.ts';
import type { Sql, Tx } from './connect.ts';
import { CHANGES_CHANNEL, REPLICATED_TABLES, type ReplicatedTable } from './schema.ts';

/**
 * One replicated table as this process holds it. `load` reads it whole inside the replica's read-only,
 * repeatable-read transaction; `delta`, when given, reads only what changed after a number (the sessions,
 * which are too many to read whole at every change). Each returns a function that applies what was read:
 * nothing is applied before the transaction has ended well. `read` says which catch-up it is and how far its
 * snapshot goes, for a table that applies its own writes ahead of the replica (sessions.ts).
 */
export interface TableSync {
  load(tx: Tx, read: ReadAt): Promise<() => void>;
  delta?(tx: Tx, after: number, read: ReadAt): Promise<() => void>;
}

/**
 * A catch-up read: its number (Replica.reads: a write committed while the latest read begun was `seq` may be
 * missing from that read's snapshot, never from a later one's) and the table's change number in its snapshot.
 */
export interface ReadAt {
  seq: number;
  last: number;
}

interface Counter {
  last: number;
  pruned: number;
}

export interface ReplicaOptions {
  log: Log;
  clock?: Clock;
  /** How often the counters are read even without a notification (a lost one; the staleness measure), ms. */
  pollMs?: number;
  /** Staleness past which it is logged (again every this much while it lasts), ms. */
  staleLogMs?: number;
  /** A catch-up (a full load included) not answered within this is given up and tried again, ms. */
  readTimeoutMs?: number;
  /**
   * Awaited between a read that ended well and its apply, with what it will apply: a seam for tests that hold
   * a catch-up mid-way (its snapshot taken, nothing applied yet) while this process writes.
   */
  applying?: (tables: readonly ReadApplied[]) => Promise<void> | void;
}

/** A table a read brings: up to which change, and whether whole (a load) or a delta. */
export interface ReadApplied {
  tab: ReplicatedTable;
  last: number;
  full: boolean;
}

/**
 * This process's copy of the shared tables, so that reads never wait on the network (issue 15). It listens
 * first, then reads: on every (re)connection of its LISTEN it catches up with every table, on a notification
 * with the table named, and every `pollMs` anyway. Catching up reads the counters and, in one read-only
 * snapshot, for each table whose number moved, its delta (or all of it: at the first load, or when the
 * deletions it would need have been pruned). While PostgreSQL cannot be reached, the copy stays as it was and
 * its age is logged; the next successful read catches up without a restart.
 */
export class Replica {
  readonly #sql: Sql;
  readonly #log: Log;
  readonly #clock: Clock;
  readonly #pollMs: number;
  readonly #staleLogMs: number;
  readonly #readTimeoutMs: number;
  readonly #applying: ReplicaOptions['applying'];
  readonly #tables = new Map<ReplicatedTable, TableSync>();
  /** What this process has applied of each table; -1: never loaded. */
  readonly #applied = new Map<ReplicatedTable, number>(REPLICATED_TABLES.map((t) => [t, -1]));
  readonly #waiters: Array<{ tab: ReplicatedTable; change: number; resolve: () => void }> = [];
  #caughtUpAt: number | undefined;
  /** Catch-up reads begun so far. */
  #reads = 0;
  #lastStaleLog = 0;
  #running: Promise<void> | undefined;
  #again = false;
  #timer: NodeJS.Timeout | undefined;
  #unlisten: (() => Promise<void>) | undefined;
  #closed = false;
  /** LISTEN has been set up once: the next onlisten is a reconnect. */
  #listened = false;
  /** The next catch-up reads every table whole. */
  #reloadAll = false;
  /** The server last read from (its start time and address): another one means reading everything again. */
  #server: string | undefined;

  constructor(sql: Sql, options: ReplicaOptions) {
    this.#sql = sql;
    this.#log = options.log;
    this.#clock = options.clock ?? systemClock;
    this.#pollMs = options.pollMs ?? 1000;
    this.#staleLogMs = options.staleLogMs ?? 10_000;
    this.#readTimeoutMs = options.readTimeoutMs ?? 15_000;
    this.#applying = options.applying;
  }

  /** Register a table before start(). */
  table(tab: ReplicatedTable, sync: TableSync): void {
    this.#tables.set(tab, sync);
  }

  /**
   * Listen, then load every registered table. Resolves once loaded (the process can answer); rejects if
   * PostgreSQL cannot be reached now: call it again to try again (what succeeded is not redone).
   */
  async start(): Promise<void> {
    if (this.#unlisten === undefined) {
      const listening = await this.#sql.listen(
        CHANGES_CHANNEL,
        (payload) => {
          const change = parseChange(payload);
          if (change !== undefined && change.change > this.applied(change.tab)) void this.catchUp();
        },
        // On the first LISTEN and on every one after a reconnect: what was sent meanwhile is lost, and the
        // server may be another (a failover), so everything is read again.
        () => {
          if (this.#listened) this.#reloadAll = true;
          this.#listened = true;
          void this.catchUp();
        },
      );
      this.#unlisten = listening.unlisten;
    }
    await this.catchUp();
    const unloaded = [...this.#tables.keys()].filter((tab) => this.applied(tab) < 0);
    if (unloaded.length > 0)
      throw new DoormanError('STORE_UNAVAILABLE', `PostgreSQL store: could not load ${unloaded.join(', ')}`);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => void this.catchUp(), this.#pollMs);
      this.#timer.unref();
    }
  }

  /** Whether every registered table has been loaded once (answers can be given). */
  loaded(): boolean {
    return [...this.#tables.keys()].every((tab) => this.applied(tab) >= 0);
  }

  /** The change number of `tab` this process has applied (-1 before the first load). */
  applied(tab: ReplicatedTable): number {
    return this.#applied.get(tab) ?? -1;
  }

  /**
   * Resolves once this process has applied `tab` up to `change` (a write's own, for read-your-writes), or after
   * `deadlineMs` anyway: the write is durable, only this process's view of it would be late (PostgreSQL gone
   * right after the commit), and a writer must not wait for ever.
   */
  caughtUp(tab: ReplicatedTable, change: number, deadlineMs = 5000): Promise<void> {
    if (this.applied(tab) >= change) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = { tab, change, resolve: () => (clearTimeout(timer), resolve()) };
      const timer = setTimeout(() => {
        const at = this.#waiters.indexOf(waiter);
        if (at >= 0) this.#waiters.splice(at, 1);
        resolve();
      }, deadlineMs);
      this.#waiters.push(waiter);
      void this.catchUp();
    });
  }

  /**
   * How many catch-up reads have begun (the one under way, if any, is the latest): each takes its snapshot
   * after it has begun, so a write committed before read n began is in n's snapshot (on that server).
   */
  reads(): number {
    return this.#reads;
  }

  /** Ms since this process last read the counters successfully; undefined before the first time. */
  staleMs(): number | undefined {
    return this.#caughtUpAt === undefined ? undefined : this.#clock.now() - this.#caughtUpAt;
  }

  /** Catch up now (coalesced: one read at a time, and one more if asked meanwhile). */
  catchUp(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#running !== undefined) {
      this.#again = true;
      return this.#running;
    }
    this.#running = this.#read()
      .catch((error: unknown) => this.#unreachable(error))
      .finally(() => {
        this.#running = undefined;
        if (this.#again && !this.#closed) {
          this.#again = false;
          void this.catchUp();
        }
      });
    return this.#running;
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    await this.#unlisten?.().catch(() => undefined);
    await this.#running;
  }

  async #read(): Promise<void> {
    // Taken now: a reconnect during this read asks for the next one to read everything again.
    const reloadAll = this.#reloadAll;
    this.#reloadAll = false;
    try {
      await this.#readOnce(reloadAll);
    } catch (error) {
      this.#reloadAll ||= reloadAll;
      throw error;
    }
  }

  async #readOnce(reloadAll: boolean): Promise<void> {
    const seq = ++this.#reads;
    const reading = this.#sql.begin('isolation level repeatable read read only', async (tx) => {
      // A full load of a million rows may take longer than a write may (connect.ts): its own bound.
      // Which server answers, as of when it started: another one (a failover, a restore, a restart) may lack
      // commits this copy holds, with the same change numbers: then everything is read again.
      const [server] = await tx<{ id: string }[]>`
        SELECT set_config('statement_timeout', ${String(this.#readTimeoutMs)}, true) || '|' ||
          pg_postmaster_start_time()::text || '|' || coalesce(host(inet_server_addr()), '') || '|' ||
          coalesce(inet_server_port(), 0) AS id`;
      const moved = this.#server !== undefined && server?.id !== this.#server;
      const rows = await tx<({ tab: ReplicatedTable } & Counter)[]>`SELECT tab, last, pruned FROM changes`;
      const out: Array<ReadApplied & { apply: () => void }> = [];
      for (const row of rows) {
        const sync = this.#tables.get(row.tab);
        const applied = this.applied(row.tab);
        if (sync === undefined || (row.last === applied && !reloadAll && !moved)) continue;
        // A full load: at first, past pruned deletions, after a reconnect (a failover may have lost commits
        // this copy holds), or when the database is behind this copy (restored, or promoted without them).
        const full = applied < 0 || applied < row.pruned || row.last < applied || reloadAll || moved;
        const delta = full ? undefined : sync.delta?.bind(sync);
        const read = { seq, last: row.last };
        const apply = await (delta === undefined ? sync.load(tx, read) : delta(tx, applied, read));
        out.push({ tab: row.tab, last: row.last, full: delta === undefined, apply });
      }
      return { out, server: server?.id };
    });
    // A read that never ends (a peer gone without a word: no RST, no FIN) would hold every later catch-up:
    // past the deadline it is given up, and what it brings later is dropped (never applied over newer data).
    reading.catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const { out: applies, server } = await Promise.race([
      reading,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${this.#readTimeoutMs} ms`)),
          this.#readTimeoutMs,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    if (this.#applying !== undefined)
      await this.#applying(applies.map(({ tab, last, full }) => ({ tab, last, full })));
    for (const { tab, last, apply } of applies) {
      // One table that cannot be applied (a row this Doorman cannot read) stops only itself, named.
      try {
        apply();
        this.#applied.set(tab, last);
      } catch (error) {
        this.#log(
          `store: ${tab} at change ${last} cannot be applied, kept as it was: ${(error as Error).message}`,
        );
      }
    }
    if (server !== undefined && server !== this.#server) {
      if (this.#server !== undefined)
        this.#log(`store: another PostgreSQL server answers now; everything read again`);
      this.#server = server;
    }
    if (this.#caughtUpAt !== undefined && this.#clock.now() - this.#caughtUpAt >= this.#staleLogMs) {
      this.#log(
        `store: PostgreSQL reachable again; caught up after ${this.#clock.now() - this.#caughtUpAt} ms`,
      );
    }
    this.#caughtUpAt = this.#clock.now();
    this.#wake();
  }

  #wake(): void {
    const ready = this.#waiters.filter((w) => this.applied(w.tab) >= w.change);
    for (const waiter of ready) {
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  }

  #unreachable(error: unknown): void {
    const now = this.#clock.now();
    if (now - this.#lastStaleLog < this.#staleLogMs) return;
    this.#lastStaleLog = now;
    const age =
      this.#caughtUpAt === undefined ? 'never loaded' : `last caught up ${now - this.#caughtUpAt} ms ago`;
    this.#log(`store: PostgreSQL unreachable (${(error as Error).message}): answering from memory, ${age}`);
  }
}
