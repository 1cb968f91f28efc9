import type { Session, SessionKey } from './session.ts';

/**
 * A search of the live sessions (the admin's Sessions screen): by user name (ASCII case-insensitive, as both
 * engines can compare it without a collation of their own), by IP address, or by MAC address (a registration's
 * key, or the MAC an address binding was made for); the whole text or its start. Answers come a page at a
 * time in key order (key kind, then key: the store's own order), each page after the last key of the one
 * before, so no request ever sorts or renders every session.
 */
export const SESSION_SEARCH_FIELDS = ['user', 'ip', 'mac'] as const;
export type SessionSearchField = (typeof SESSION_SEARCH_FIELDS)[number];

export interface SessionSearch {
  by: SessionSearchField;
  /** As normalised by the caller: an IP or MAC in the store's spelling (a prefix of it, for `prefix`). */
  text: string;
  /** The text is the start of the value, not all of it. */
  prefix: boolean;
  /** The page after this key (exclusive); the first page without. */
  after?: SessionKey;
  /** At most this many sessions, 1 to MAX_SEARCH_LIMIT. */
  limit: number;
}

export interface SessionPage {
  sessions: Session[];
  /** There are more after the last one. */
  more: boolean;
}

export const MAX_SEARCH_LIMIT = 500;

/** ASCII-only lower case: what SQLite's LIKE and NOCASE fold, so both engines find the same sessions. */
export const foldAscii = (text: string): string => text.replace(/[A-Z]/g, (c) => c.toLowerCase());

/** Whether a session matches (the PostgreSQL store's scan of its replica; SQLite says the same in SQL). */
export function sessionMatches(
  session: Session,
  search: Pick<SessionSearch, 'by' | 'text' | 'prefix'>,
): boolean {
  const text = search.by === 'user' ? foldAscii(search.text) : search.text;
  const is = (value: string | undefined) =>
    value !== undefined && (search.prefix ? value.startsWith(text) : value === text);
  switch (search.by) {
    case 'user':
      return is(foldAscii(session.username));
    case 'ip':
      return session.key.kind === 'ip' && is(session.key.value);
    case 'mac':
      return session.key.kind === 'mac' ? is(session.key.value) : is(session.mac);
  }
}

/** Key order: kind ('ip' before 'mac'), then the key in byte order (SQLite's BINARY collation on ASCII keys). */
export function compareKeys(a: SessionKey, b: SessionKey): number {
  if (a.kind !== b.kind) return a.kind < b.kind ? -1 : 1;
  return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
}

/**
 * The first `limit` matches after `after`, from sessions in any order, in one pass: a sorted list of at most
 * limit + 1 is kept (a session past its last is dropped at one comparison), so a scan of a million sessions
 * sorts none of them whole. Linear in the sessions, times the page size at worst.
 */
export function firstMatches(sessions: Iterable<Session>, search: SessionSearch): SessionPage {
  const keep = search.limit + 1;
  const kept: Session[] = [];
  for (const session of sessions) {
    if (search.after !== undefined && compareKeys(session.key, search.after) <= 0) continue;
    if (!sessionMatches(session, search)) continue;
    const last = kept.at(-1);
    if (kept.length === keep && last !== undefined && compareKeys(session.key, last.key) >= 0) continue;
    let at = kept.length;
    while (at > 0 && compareKeys(session.key, (kept[at - 1] as Session).key) < 0) at -= 1;
    kept.splice(at, 0, session);
    if (kept.length > keep) kept.pop();
  }
  return { sessions: kept.slice(0, search.limit), more: kept.length > search.limit };
}
