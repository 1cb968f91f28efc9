import { DoormanError } from '../errors.ts';
import type { AuditEvent, AuditKind } from './event.ts';

/** A page of events is at most this long. */
export const AUDIT_PAGE_MAX = 200;

/**
 * Rows a filtered page reads at most (user, address, kind: the trail has no index on them, which would cost
 * every login two random index pages in the store's log, see migrations.ts 8). A page that reaches it ends
 * there, with fewer events than asked and a cursor to go on from: each page is bounded work however rare
 * the match.
 */
export const AUDIT_SCAN_ROWS = 100_000;

/** Whether a query filters on more than time (it then reads at most AUDIT_SCAN_ROWS rows a page). */
export const scans = (query: Omit<AuditQuery, 'limit'>): boolean =>
  query.user !== undefined || query.address !== undefined || query.kind !== undefined;

/**
 * The user filter's other half: the actors of that name, whoever acted as an admin, a CLI user, an API key or a
 * user on the splash page (`admin:alice`, `cli:alice`, `api-key:alice`, `user:alice` for alice).
 */
export const actorsNamed = (user: string): string[] =>
  ['admin:', 'cli:', 'api-key:', 'user:'].map((prefix) => prefix + user);

/**
 * Where a page ends: the (at, id) of its last event. The next page is every event strictly older in that
 * order (keyset paging: as cheap on page 1,000 as on page 1, and stable while events are being added).
 */
export interface AuditCursor {
  at: number;
  id: number;
}

/** The audit screen's filters (every one optional) and the page wanted. */
export interface AuditQuery {
  /** The event's user; for an event about no user (an admin's action), the admin or CLI user who acted. */
  user?: string;
  address?: string;
  kind?: AuditKind;
  /** From this time (ms, inclusive) to this time (ms, exclusive). */
  from?: number;
  to?: number;
  /** Older than this (the previous page's `next`). */
  before?: AuditCursor;
  limit: number;
  /** Rows a filtered page reads at most; default AUDIT_SCAN_ROWS (tests give fewer). */
  scanRows?: number;
}

export interface AuditPage {
  /** Newest first. */
  events: AuditEvent[];
  /** The cursor of the next (older) page; undefined when this is the last. */
  next: AuditCursor | undefined;
  /** A filtered page that stopped at AUDIT_SCAN_ROWS rows: the time it had searched back to. */
  searchedTo?: number;
}

/** The cursor as it travels in a URL: `<at>.<id>`. */
export const showCursor = (cursor: AuditCursor): string => `${cursor.at}.${cursor.id}`;

export function parseCursor(text: string): AuditCursor {
  const match = /^(\d{1,16})\.(\d{1,16})$/.exec(text);
  if (match === null)
    throw new DoormanError(
      'INVALID_INPUT',
      `before: not a page cursor: ${JSON.stringify(text.slice(0, 40))}`,
    );
  return { at: Number(match[1]), id: Number(match[2]) };
}

/**
 * A page from `limit + 1` matching rows read: the extra row only says there is a next page. `scannedTo`: the
 * last row a bounded scan read, when it read all it may (the next page goes on from there).
 */
export function pageOf(rows: AuditEvent[], limit: number, scannedTo?: AuditCursor): AuditPage {
  const events = rows.slice(0, limit);
  const last = events.at(-1);
  if (rows.length > limit && last !== undefined) return { events, next: { at: last.at, id: last.id } };
  if (scannedTo !== undefined) return { events, next: scannedTo, searchedTo: scannedTo.at };
  return { events, next: undefined };
}

/** The limit asked for, within 1..AUDIT_PAGE_MAX. */
export const pageLimit = (limit: number): number => Math.max(1, Math.min(AUDIT_PAGE_MAX, Math.floor(limit)));
