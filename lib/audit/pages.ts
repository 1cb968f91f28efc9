import { DoormanError } from '../errors.ts';
import type { AuditEvent, AuditKind, AuditRecord } from './event.ts';

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
