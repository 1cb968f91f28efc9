import { type AuditRecord, auditRecords, withGroup } from '../../audit/event.ts';
import { hostname } from 'node:os';
import type { Clock } from '../../clock.ts';
import { addressBinding } from '../../portal/address-binding.ts';
import { agreementSession } from '../../portal/portal-sessions.ts';
import { CidrSet, type DeviceGroup, type PortalSettings } from '../../portal/settings.ts';
import {
  idleGraceMs,
  toSession,
  type Replaced,
  replacedUnlessRenewal,
  type Session,
  type SessionKey,
  type SessionSource,
  type StartSession,
} from '../session.ts';
import { firstMatches, type SessionPage, type SessionSearch } from '../session-search.ts';
import type { Audited, PortalStarted, SessionRepository } from '../store.ts';
import { insertAudit } from './audit.ts';
import { takeChange } from './changes.ts';
import type { Sql, Tx } from './connect.ts';
import { OwnWrites } from './own-writes.ts';
import type { Replica } from './replica.ts';
import { deleteSessions } from './session-deletions.ts';
import { purgeSessions, touchSessions } from './session-upkeep.ts';
import { SessionTable, type SessionRow } from './session-table.ts';
import { type Context, upsert, upsertMany } from './session-upsert.ts';
import { WriteBatch, type Effect } from './write-batch.ts';

/** Rows read at a time by a full load. */
const LOAD_CHUNK_ROWS = 10_000;

/** A login as the batch holds it until its statement runs. */
interface StartInput {
  start: StartSession;
  audit: Parameters<PgSessions['start']>[1];
}

interface GroupRow {
  id: number;
  name: string;
  cidrs: string[];
  active: boolean;
}

/**
 * Sessions on PostgreSQL. Lookups (find, list) answer from this process's copy (SessionTable), kept by the
 * replica; writes of one event-loop turn go to PostgreSQL in one transaction with one change number (WriteBatch)
 * and, once committed, are applied to the copy at once: the writer reads its own writes, other boxes have them
 * at their replica's next catch-up (the NOTIFY, tens of ms).
 */
export class PgSessions implements SessionRepository {
  #table = new SessionTable();
  readonly #replica: Replica;
  readonly #clock: Clock;
  readonly #batch: WriteBatch<Context>;
  /** Own writes applied ahead of the replica: changeStamp moves with them too. */
  #ownWrites = 0;
  /** Those a catch-up under way may lack, to apply again after it. */
  readonly #own = new OwnWrites();
  readonly #box: string;
  readonly #idleGraceMs: number;

  constructor(
    sql: Sql,
    replica: Replica,
    options: {
      clock: Clock;
      deadlineMs?: number;
      /** This box's name in audit events; default os.hostname(). */
      box?: string;
      /** Given each write's audit events once committed. */
      ship?: (records: readonly AuditRecord[]) => void;
      /** How long past its idle limit a session is purged (lib/store/sqlite-store.ts idleGraceMs); default 1 min. */
      idleGraceMs?: number;
    },
  ) {
    this.#replica = replica;
    this.#clock = options.clock;
    this.#box = options.box ?? hostname();
    this.#idleGraceMs = options.idleGraceMs ?? idleGraceMs(0);
    const ship = options.ship;
    replica.table('sessions', {
      // Read in chunks into a table of its own, put in place once the read has ended well: a million rows
      // never sit in memory twice over (the driver's rows beside the table's), which is most of the peak.
      // Each apply puts this process's writes made meanwhile back on top (own-writes.ts).
      load: async (tx, read) => {
        const table = new SessionTable();
        for await (const rows of tx<SessionRow[]>`SELECT * FROM sessions`.cursor(LOAD_CHUNK_ROWS)) {
          for (const row of rows) table.put(row);
        }
        return () => {
          this.#table = table;
          this.#own.replay(table, read);
        };
      },
      delta: async (tx, after, read) => {
        const rows = await tx<SessionRow[]>`SELECT * FROM sessions WHERE change > ${after}`;
        const gone = await tx<{ id: number }[]>`SELECT id FROM session_deletions WHERE change > ${after}`;
        return () => {
          for (const { id } of gone) this.#table.remove(id);
          for (const row of rows) this.#table.put(row);
          this.#own.replay(this.#table, read);
        };
      },
    });
    this.#batch = new WriteBatch<Context>({
      sql,
      ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
      begin: async (tx, needs) => {
        // Lock order (write.ts): device_groups before sessions. An agreement decides on the groups as a Device
        // Group writer leaves them: sharing their counter row waits for one in flight, and holds off the next
        // until this commit, so no group is switched off between the decision and the session.
        if (needs.has('device_groups'))
          await tx`SELECT last FROM changes WHERE tab = 'device_groups' FOR SHARE`;
        return { change: await takeChange(tx, 'sessions'), now: this.#clock.now() };
      },
      committed: (context, effects) => {
        this.#applyOwn(context.change, effects);
        if (ship !== undefined) {
          const records = effects.flatMap((effect) => effect.audit ?? []);
          if (records.length > 0) ship(records);
        }
      },
      // Logins next to each other in a batch: one statement for all of them, and one for their audit events.
      merged: {
        start: (tx, context, inputs) => this.#startMany(tx, context, inputs as StartInput[]),
      },
    });
  }

  find(key: SessionKey): Session | undefined {
    return this.#table.find(key, this.#clock.now());
  }

  list(): Session[] {
    return this.#table.list(this.#clock.now());
  }

  /**
   * A scan of this process's copy: an exact address or MAC key is one lookup; anything else is one pass over
   * the live sessions keeping only the page (firstMatches), never a sort of them all.
   */
  search(search: SessionSearch): SessionPage {
    const now = this.#clock.now();
    if (!search.prefix && search.by === 'ip') {
      const found = this.#table.find({ kind: 'ip', value: search.text }, now);
      return firstMatches(found === undefined ? [] : [found], search);
    }
    return firstMatches(this.#table.live(now), search);
  }

  /** How many sessions this process holds (live or not yet purged). */
  get size(): number {
    return this.#table.size;
  }

  changeStamp(): string {
    return `${this.#replica.applied('sessions')}:${this.#ownWrites}`;
  }

  start(
    input: StartSession,
    audit?: Audited | ((previous: Replaced | undefined) => Audited),
  ): Promise<Session> {
    const one: StartInput = { start: input, audit };
    // The batch runs every start through the merged statement (#startMany), alone or with its neighbours.
    return this.#batch.run(
      async (tx, context) => (await this.#startMany(tx, context, [one]))[0] as Effect<Session>,
      { merge: { kind: 'start', input: one } },
    );
  }

  /**
   * Logins next to each other in a batch: one statement for all of them, and one for their audit events, each
   * given the session it replaced as that statement found it in the database.
   */
  async #startMany(tx: Tx, context: Context, inputs: readonly StartInput[]): Promise<Effect<Session>[]> {
    const upserted = await upsertMany(
      tx,
      context,
      inputs.map((s) => s.start),
    );
    const audits = inputs.map(({ start, audit }, i) =>
      auditRecords(
        typeof audit === 'function' ? audit(replacedUnlessRenewal(start, upserted[i]?.replaced)) : audit,
        context.now,
        this.#box,
      ),
    );
    await insertAudit(tx, audits.flat());
    return upserted.map(({ row }, i) => ({ value: toSession(row), rows: [row], audit: audits[i] ?? [] }));
  }

  /** Write a write's audit events in its transaction; the records, for the sinks once committed. */
  async #audit(tx: Tx, context: Context, audit: Audited | undefined): Promise<AuditRecord[]> {
    const records = auditRecords(audit, context.now, this.#box);
    await insertAudit(tx, records);
    return records;
  }

  startPortal(
    start: StartSession,
    options: { clientIp: string; settings: PortalSettings },
    audit?: Audited | ((previous: Replaced | undefined, previousOnAddress: Replaced | undefined) => Audited),
  ): Promise<PortalStarted> {
    return this.#batch.run(async (tx, context) => {
      // The sessions replaced (on the key, and on the address a binding takes), as the statements that wrote
      // found them in the database.
      const { row, replaced } = await upsert(tx, context, start);
      const session = toSession(row);
      // A registration from an IPv6 client: Squid cannot give the helper its MAC, so its address is bound too.
      const bind =
        session.key.kind === 'mac' && options.clientIp.includes(':')
          ? addressBinding(session, options.clientIp, options.settings)
          : undefined;
      const bound = bind === undefined ? undefined : await upsert(tx, context, bind);
      const replacedOnAddress = bound?.replaced;
      const value = {
        session,
        binding: bound === undefined ? undefined : toSession(bound.row),
        replaced,
        replacedOnAddress,
      };
      const told = typeof audit === 'function' ? audit(replaced, replacedOnAddress) : audit;
      const records = await this.#audit(tx, context, told);
      return { value, rows: bound === undefined ? [row] : [row, bound.row], audit: records };
    });
  }

  startAgreement(
    ip: string,
    settings: Pick<PortalSettings, 'idleTimeoutMinutes' | 'hardTimeoutMinutes'>,
    audit?: Audited,
  ): Promise<{ session: Session; group: DeviceGroup } | undefined> {
    return this.#batch.run(
      async (tx, context) => {
        // The batch holds the Device Groups' counter row shared (see begin): these are the committed groups.
        const groups = await tx<
          GroupRow[]
        >`SELECT id, name, cidrs, active FROM device_groups WHERE active ORDER BY id`;
        const holding = groups.find((g) => new CidrSet(g.cidrs).has(ip));
        if (holding === undefined) return { value: undefined };
        const { row } = await upsert(tx, context, agreementSession(ip, holding.name, settings, context.now));
        const group: DeviceGroup = {
          id: holding.id,
          name: holding.name,
          cidrs: holding.cidrs,
          active: holding.active,
        };
        const records = await this.#audit(tx, context, withGroup(audit, group.name));
        return { value: { session: toSession(row), group }, rows: [row], audit: records };
      },
      { needs: 'device_groups' },
    );
  }

  end(
    key: SessionKey,
    audit?: Audited | ((ended: Session | undefined) => Audited | undefined),
  ): Promise<Session | undefined> {
    return this.#batch.run(async (tx, context) => {
      const rows = await deleteSessions(tx, context, tx`key_kind = ${key.kind} AND key = ${key.value}`);
      const [row] = rows;
      const ended = row === undefined ? undefined : toSession(row);
      const records = await this.#audit(tx, context, typeof audit === 'function' ? audit(ended) : audit);
      return {
        value: ended,
        deleted: rows.map((r) => r.id),
        audit: records,
      };
    });
  }

  clear(audit?: Audited): Promise<number> {
    return this.#batch.run(async (tx, context) => {
      const rows = await deleteSessions(tx, context, tx`true`);
      const records = await this.#audit(tx, context, audit);
      return { value: rows.length, deleted: rows.map((r) => r.id), audit: records };
    });
  }

  endBySource(sources: readonly SessionSource[], audit?: Audited): Promise<number> {
    return this.#batch.run(async (tx, context) => {
      const rows = await deleteSessions(tx, context, tx`source = ANY(${[...sources]}::text[])`);
      const records = await this.#audit(tx, context, audit);
      return { value: rows.length, deleted: rows.map((r) => r.id), audit: records };
    });
  }

  countBySource(sources: readonly SessionSource[]): number {
    // From the slots' flags: a Session made (and its strings decoded) for each of a million would take a while.
    return this.#table.countBySource(sources, this.#clock.now());
  }

  endByUser(username: string, audit?: Audited): Promise<number> {
    return this.#batch.run(async (tx, context) => {
      const rows = await deleteSessions(tx, context, tx`username = ${username}`);
      const records = await this.#audit(tx, context, audit);
      return { value: rows.length, deleted: rows.map((r) => r.id), audit: records };
    });
  }

  /** "Last seen" times, for every box's replica to judge idleness by (session-upkeep.ts). */
  touch(seen: ReadonlyMap<number, number>): Promise<void> {
    return touchSessions(this.#batch, seen);
  }

  /** Ended sessions and old deletion records removed, the expiries recorded (session-upkeep.ts). */
  purgeExpired(): Promise<number> {
    return purgeSessions(this.#batch, this.#idleGraceMs, (tx, context, audit) =>
      this.#audit(tx, context, audit),
    );
  }

  /** Resolves once every write asked for so far has been answered. */
  drain(): Promise<void> {
    return this.#batch.drain();
  }

  /**
   * What this process wrote, into its copy at once, unless its replica has already gone past that change
   * number: then the copy holds what came after, and this would bring back an older state. Kept until a read
   * begun after it is applied (own-writes.ts).
   */
  #applyOwn(change: number, effects: readonly Effect<unknown>[]): void {
    if (this.#replica.applied('sessions') >= change) return;
    const read = this.#replica.reads();
    for (const { deleted = [], rows = [] } of effects) {
      for (const id of deleted) this.#table.remove(id);
      for (const row of rows) this.#table.put(row);
      this.#own.record(change, read, rows, deleted);
    }
    this.#ownWrites += 1;
  }
}
