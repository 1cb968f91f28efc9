import type { AuditEvent } from './event.ts';
import { eventsOf, PAGE_EVENTS, type StoredPage } from './pages.ts';
import {
  actorsNamed,
  type AuditCursor,
  type AuditPage,
  type AuditQuery,
  pageLimit,
  pageOf,
  scans,
} from './query.ts';

/** The latest time a Date holds (ms): later than any event. */
const LAST_TIME = 8.64e15;

/** Whether event a comes after b, newest first: by time, then id. */
const newer = (a: AuditCursor, b: AuditCursor) => a.at - b.at || a.id - b.id;

/**
 * One page of the Audit screen out of the stored pages, fed newest first by their newest event and then by id
 * (`atLast` descending, `id` descending: the order of the time index). The store reads pages while wants()
 * says so:
 *   - an unfiltered query (time and cursor only) stops once it holds limit + 1 events and the next page can
 *     hold none newer than the oldest of them (its newest is older; or as old, and its ids are all smaller);
 *   - a filtered one (user, address, kind) also stops once it has read scanRows events of its range, and
 *     ends its page where it stopped: every event at or above the next page's place in that order is known,
 *     the rest is the next page's. It stops only where one of the events it read is above that place, so the
 *     cursor it gives always moves on, inside a run of pages of one millisecond too (a registration date's
 *     expiries): those are read by id, a bounded number a page like any other.
 */
export class PageCollector {
  readonly #query: AuditQuery;
  readonly #limit: number;
  readonly #scanRows: number;
  readonly #scans: boolean;
  /** The user filter's actors (actorsNamed), undefined without one. */
  readonly #actors: ReadonlySet<string> | undefined;
  #matches: AuditEvent[] = [];
  /** The oldest of limit + 1 events held (newest first), once there are that many. */
  #oldestKept: AuditEvent | undefined;
  /** Events of the query's range read, and the newest of them. */
  #read = 0;
  #newestRead: AuditCursor | undefined;
  /** Where a filtered page stopped reading: the place of the first page not read (see wants). */
  #stoppedAt: AuditCursor | undefined;
  /** A filtered query's events read, as at, id pairs: its cursor is the oldest at or above #stoppedAt. */
  readonly #readKeys: number[] = [];

  constructor(query: AuditQuery, scanRows: number) {
    this.#query = query;
    this.#limit = pageLimit(query.limit);
    this.#scanRows = scanRows;
    this.#scans = scans(query);
    this.#actors = query.user === undefined ? undefined : new Set(actorsNamed(query.user));
  }

  /**
   * The exclusive upper bound on the time of the events this query can show: the pages to read are those
   * with an event older than it (atFirst < below), newest first from atLast < below + PAGE_SPAN_MS down.
   */
  static below(query: AuditQuery): number {
    const before = query.before === undefined ? LAST_TIME : query.before.at + 1;
    return Math.min(before, query.to ?? LAST_TIME);
  }

  /** Whether the next page (its newest event at `atLast`, its id `id`) is still to be read. */
  wants(atLast: number, id: number): boolean {
    // The newest place an event of this page can have: every one of its ids is below the next page's.
    const place = { at: atLast, id: (id + 1) * PAGE_EVENTS - 1 };
    if (this.#oldestKept !== undefined && newer(place, this.#oldestKept) < 0) return false;
    if (this.#scans && this.#read >= this.#scanRows) {
      if (this.#newestRead !== undefined && newer(this.#newestRead, place) > 0) {
        this.#stoppedAt = place;
        return false;
      }
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
      if (this.#newestRead === undefined || newer(event, this.#newestRead) > 0) this.#newestRead = event;
      if (this.#scans) this.#readKeys.push(event.at, event.id);
      if (user !== undefined && event.user !== user && !this.#actors?.has(event.actor)) continue;
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
    // Known: every event above the first page not read. The cursor is the oldest read there (wants() stopped
    // only with one read there), so the next page goes on strictly below it and below the last cursor.
    let end: AuditCursor | undefined;
    const keys = this.#readKeys;
    for (let i = 0; i < keys.length; i += 2) {
      const key = { at: keys[i] as number, id: keys[i + 1] as number };
      if (newer(key, stoppedAt) > 0 && (end === undefined || newer(key, end) < 0)) end = key;
    }
    const cursor = end ?? (this.#newestRead as AuditCursor);
    const known = this.#matches.filter((event) => newer(event, cursor) >= 0);
    return pageOf(known, this.#limit, cursor);
  }
}
