import { DoormanError } from '../errors.ts';
import type { AuditEvent, AuditKind, AuditRecord } from './event.ts';
import { type AuditCursor, type AuditPage, type AuditQuery, pageLimit, pageOf, scans } from './query.ts';

/**
 * The audit trail's pages, as SQLite keeps it (lib/store/migrations.ts 9): the events of one group commit
 * stored as one row instead of a row each. A login pays for its share of one row where a row of its own cost
 * it ~2.4 µs in one process and twice that in serve; what is left is mostly the page's bytes in the WAL
 * (bench/README), so a page is written small: the JSON array
 *
 *   [[kind or actor, …], [dt, k, a, user, address], [dt, k, a, user, address, detail], …]
 *
 * whose first item lists the kinds and actors once (k and a index it), dt is the event's time less the page's
 * at_first (ms), user and address are null for none, and the detail is left out when empty. A login's event is
 * ~30 bytes where the plain record's JSON is ~70. An event's id is `page id × PAGE_EVENTS + its index`, so
 * (at, id) orders events as a row each did and keyset cursors work. Pure: the store runs the statements.
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
  atFirst: number;
  box: string;
  events: string;
}

/** An event as a page holds it: [dt, k, a, user, address] and the detail when it has a key. */
type Encoded = Array<number | string | null | Record<string, unknown>>;

const hasKeys = (object: Record<string, unknown>): boolean => {
  for (const key in object) if (Object.hasOwn(object, key)) return true;
  return false;
};

/** A page being filled: its strings (kinds and actors) by index, and its events. */
class PageBuilder {
  readonly first: AuditRecord;
  last: AuditRecord;
  readonly #strings: string[] = [];
  readonly #index = new Map<string, number>();
  readonly #events: Encoded[] = [];

  constructor(first: AuditRecord) {
    this.first = first;
    this.last = first;
  }

  get size(): number {
    return this.#events.length;
  }

  #indexOf(text: string): number {
    let i = this.#index.get(text);
    if (i === undefined) {
      i = this.#strings.push(text) - 1;
      this.#index.set(text, i);
    }
    return i;
  }

  add(r: AuditRecord): void {
    this.last = r;
    const event: Encoded = [
      r.at - this.first.at,
      this.#indexOf(r.kind),
      this.#indexOf(r.actor),
      r.user ?? null,
      r.address ?? null,
    ];
    if (hasKeys(r.detail)) event.push(r.detail);
    this.#events.push(event);
  }

  page(): NewPage {
    return {
      atFirst: this.first.at,
      atLast: this.last.at,
      box: this.first.box,
      events: JSON.stringify([this.#strings, ...this.#events]),
    };
  }
}

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
  let page = new PageBuilder(sorted[0] as AuditRecord);
  for (const r of sorted) {
    const { first } = page;
    if (
      page.size > 0 &&
      (page.size === PAGE_EVENTS || r.at - first.at > PAGE_SPAN_MS || r.box !== first.box)
    ) {
      pages.push(page.page());
      page = new PageBuilder(r);
    }
    page.add(r);
  }
  pages.push(page.page());
  return pages;
}

const unreadable = (page: StoredPage, what: string) =>
  new DoormanError('INVALID_INPUT', `audit page ${page.id}: ${what}`);

const isStringOrNull = (value: unknown) => value === null || typeof value === 'string';

/** A stored page's events, oldest first, with their ids. */
export function eventsOf(page: StoredPage): AuditEvent[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(page.events);
  } catch {
    throw unreadable(page, 'not valid JSON');
  }
  if (!Array.isArray(parsed) || parsed.length > PAGE_EVENTS + 1 || !Array.isArray(parsed[0]))
    throw unreadable(page, 'not [strings, events…]');
  const strings = parsed[0] as unknown[];
  const text = (i: unknown, event: number): string => {
    const value = typeof i === 'number' ? strings[i] : undefined;
    if (typeof value !== 'string') throw unreadable(page, `event ${event} names no kind or actor`);
    return value;
  };
  const events: AuditEvent[] = [];
  for (let i = 1; i < parsed.length; i++) {
    const value: unknown = parsed[i];
    const n = i - 1;
    if (
      !Array.isArray(value) ||
      (value.length !== 5 && value.length !== 6) ||
      typeof value[0] !== 'number' ||
      !isStringOrNull(value[3]) ||
      !isStringOrNull(value[4]) ||
      (value.length === 6 && (typeof value[5] !== 'object' || value[5] === null || Array.isArray(value[5])))
    )
      throw unreadable(page, `event ${n} is not [dt, kind, actor, user, address, detail?]`);
    const [dt, kind, actor, user, address, detail] = value as [
      number,
      number,
      number,
      string | null,
      string | null,
      Record<string, unknown>?,
    ];
    events.push({
      id: page.id * PAGE_EVENTS + n,
      at: page.atFirst + dt,
      box: page.box,
      kind: text(kind, n) as AuditKind,
      actor: text(actor, n),
      user: user ?? undefined,
      address: address ?? undefined,
      detail: detail ?? {},
    });
  }
  return events;
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
