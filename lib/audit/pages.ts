import { DoormanError } from '../errors.ts';
import type { AuditEvent, AuditKind, AuditRecord } from './event.ts';
import { type AuditCursor, type AuditPage, type AuditQuery, pageLimit, pageOf, scans } from './query.ts';

/**
 * The audit trail's pages, as SQLite keeps it (lib/store/migrations.ts 9): the events of one group commit
 * stored as one row, a JSON array, instead of a row each. A login pays for its share of one row (about a
 * tenth of a µs of JSON and SQLite at 27 logins a commit) where a row of its own cost it ~2.4 µs in one
 * process and twice that in serve. Pure: the store runs the statements.
 *
 * An event is `[at, kind, actor, user, address, detail]` (null for no user or address); its id is
 * `page id × PAGE_EVENTS + its index`, so (at, id) orders events as before and keyset cursors still work.
 */

/** Events a page holds at most. */
export const PAGE_EVENTS = 1024;

/**
 * A page's events are at most this far apart in time (ms): a page whose newest event is this much newer than
 * a cursor holds nothing older than it, so a page of the screen reads pages from just above where it starts.
 */
export const PAGE_SPAN_MS = 1000;

/** A page as written: its time range (for the time index), the box, the events as JSON. */
export interface NewPage {
  atFirst: number;
  atLast: number;
  box: string;
  events: string;
}

/** A page as read. */
export interface StoredPage {
  id: number;
  box: string;
  events: string;
}

type Encoded = [number, string, string, string | null, string | null, Record<string, unknown>];

/**
 * A group commit's records as pages: in time order (stable: a commit's records of one millisecond keep the
 * order they were written in), a new page at PAGE_EVENTS events, PAGE_SPAN_MS or another box.
 */
export function pagesOf(records: readonly AuditRecord[]): NewPage[] {
  if (records.length === 0) return [];
  let sorted = records;
  for (let i = 1; i < records.length; i++) {
    if ((records[i] as AuditRecord).at < (records[i - 1] as AuditRecord).at) {
      sorted = [...records].sort((a, b) => a.at - b.at);
      break;
    }
  }
  const pages: NewPage[] = [];
  let page: Encoded[] = [];
  let first = sorted[0] as AuditRecord;
  let last = first;
  const close = () => {
    pages.push({ atFirst: first.at, atLast: last.at, box: first.box, events: JSON.stringify(page) });
    page = [];
  };
  for (const r of sorted) {
    if (
      page.length > 0 &&
      (page.length === PAGE_EVENTS || r.at - first.at > PAGE_SPAN_MS || r.box !== first.box)
    ) {
      close();
      first = r;
    }
    last = r;
    page.push([r.at, r.kind, r.actor, r.user ?? null, r.address ?? null, r.detail]);
  }
  close();
  return pages;
}

const unreadable = (page: StoredPage, what: string) =>
  new DoormanError('INVALID_INPUT', `audit page ${page.id}: ${what}`);

/** A stored page's events, oldest first, with their ids. */
export function eventsOf(page: StoredPage): AuditEvent[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(page.events);
  } catch {
    throw unreadable(page, 'not valid JSON');
  }
  if (!Array.isArray(parsed) || parsed.length > PAGE_EVENTS) throw unreadable(page, 'not a list of events');
  return parsed.map((value, i) => {
    if (!Array.isArray(value) || value.length !== 6)
      throw unreadable(page, `event ${i} is not [at, kind, actor, user, address, detail]`);
    const [at, kind, actor, user, address, detail] = value as Encoded;
    return {
      id: page.id * PAGE_EVENTS + i,
      at,
      box: page.box,
      kind: kind as AuditKind,
      actor,
      user: user ?? undefined,
      address: address ?? undefined,
      detail,
    };
  });
}

/** The latest time a Date holds (ms): later than any event. */
const LAST_TIME = 8.64e15;

/** Whether event a comes after b, newest first: by time, then id. */
const newer = (a: AuditCursor, b: AuditCursor) => a.at - b.at || a.id - b.id;

/**
 * One page of the Audit screen out of the stored pages, fed newest first by their newest event (`atLast`
 * descending; pages of one atLast in any order). The store reads pages while wants() says so:
 *   - an unfiltered query (time and cursor only) stops once it holds limit + 1 events and the next page's
 *     newest is older than the oldest of them: nothing further on can come before them;
 *   - a filtered one (user, address, kind) also stops once it has read scanRows events
 *     (lib/audit/query.ts AUDIT_SCAN_ROWS), and ends its page where it stopped: the events newer than the next
 *     page's newest are all known, the rest is the next page's.
 */
export class PageCollector {
  readonly #query: AuditQuery;
  readonly #limit: number;
  readonly #scanRows: number;
  readonly #scans: boolean;
  #matches: AuditEvent[] = [];
  /** The oldest of limit + 1 events held (newest first), once there are that many. */
  #oldestKept: AuditEvent | undefined;
  #read = 0;
  /** Where a filtered page stopped reading: the newest time of the first page not read. */
  #stoppedAt: number | undefined;
  /** A filtered query's events read, as at, id pairs: where it stopped is the oldest above #stoppedAt. */
  readonly #readKeys: number[] = [];

  constructor(query: AuditQuery, scanRows: number) {
    this.#query = query;
    this.#limit = pageLimit(query.limit);
    this.#scanRows = scanRows;
    this.#scans = scans(query);
  }

  /**
   * The exclusive upper bound on the time of the events this query can show: the pages to read are those
   * with an event older than it (atFirst < below), newest first from atLast < below + PAGE_SPAN_MS down.
   */
  static below(query: AuditQuery): number {
    const before = query.before === undefined ? LAST_TIME : query.before.at + 1;
    return Math.min(before, query.to ?? LAST_TIME);
  }

  /** Whether the next page (its newest event at `atLast`) is still to be read. */
  wants(atLast: number): boolean {
    if (this.#oldestKept !== undefined && atLast < this.#oldestKept.at) return false;
    if (this.#scans && this.#read >= this.#scanRows) {
      this.#stoppedAt = atLast;
      return false;
    }
    return true;
  }

  add(page: StoredPage): void {
    const { user, address, kind, from, to, before } = this.#query;
    for (const event of eventsOf(page)) {
      if (from !== undefined && event.at < from) continue;
      if (to !== undefined && event.at >= to) continue;
      if (before !== undefined && newer(event, before) >= 0) continue;
      // Read: in the query's time range (a page may hold events on both sides of a cursor; those above it
      // were the previous page's, and count for nothing here).
      this.#read++;
      if (this.#scans) this.#readKeys.push(event.at, event.id);
      if (user !== undefined && event.user !== user && !isActor(event.actor, user)) continue;
      if (address !== undefined && event.address !== address) continue;
      if (kind !== undefined && event.kind !== kind) continue;
      this.#matches.push(event);
    }
    // Kept to limit + 1, sorted, once there are that many (and again at twice that): bounded memory whatever
    // the scan, and the oldest kept known from then on.
    const kept = this.#limit + 1;
    const held = this.#matches.length;
    if (held >= 2 * kept || (held >= kept && this.#oldestKept === undefined)) this.#trim();
  }

  #trim(): void {
    this.#matches.sort((a, b) => newer(b, a));
    if (this.#matches.length > this.#limit) {
      this.#matches.length = this.#limit + 1;
      this.#oldestKept = this.#matches[this.#limit];
    }
  }

  result(): AuditPage {
    this.#trim();
    const stoppedAt = this.#stoppedAt;
    if (stoppedAt === undefined) return pageOf(this.#matches, this.#limit);
    // Only what is newer than every page not read is known: down to the oldest event read above it.
    let end: AuditCursor | undefined;
    const keys = this.#readKeys;
    for (let i = 0; i < keys.length; i += 2) {
      const key = { at: keys[i] as number, id: keys[i + 1] as number };
      if (key.at > stoppedAt && (end === undefined || newer(key, end) < 0)) end = key;
    }
    end ??= { at: stoppedAt + 1, id: 0 };
    const known = this.#matches.filter((event) => newer(event, end) >= 0);
    return pageOf(known, this.#limit, end);
  }
}

/** The user filter's other half: the admin, CLI user, API key or splash user of that name who acted. */
const isActor = (actor: string, user: string): boolean => {
  const colon = actor.indexOf(':');
  return (
    colon > 0 &&
    actor.slice(colon + 1) === user &&
    ['admin', 'cli', 'api-key', 'user'].includes(actor.slice(0, colon))
  );
};
