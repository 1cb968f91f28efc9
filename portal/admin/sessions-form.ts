import { showValue } from '../../lib/errors.ts';
import { normaliseIp, normaliseMac } from '../../lib/net/address.ts';
import type { KeyKind, SessionKey } from '../../lib/store/session.ts';
import {
  SESSION_SEARCH_FIELDS,
  type SessionSearch,
  type SessionSearchField,
} from '../../lib/store/session-search.ts';
import type { FieldProblem } from '../../lib/validation/problems.ts';

/**
 * The Sessions screen's search, read from the query string (a GET: the page can be bookmarked and reloaded)
 * or from the hidden fields of an End button's form (which then shows the same search again). Pure.
 */
export const SEARCH_FIELDS = ['q', 'by', 'match', 'after'] as const;
export type SearchField = (typeof SEARCH_FIELDS)[number];

export const SEARCH_MATCHES = ['exact', 'prefix'] as const;
export type SearchMatch = (typeof SEARCH_MATCHES)[number];

export interface SearchValues {
  q: string;
  by: SessionSearchField;
  match: SearchMatch;
}

/** Sessions a page. */
export const PAGE_SIZE = 50;
/** Longer than any user name, address or MAC: a longer text is refused, not searched for. */
export const MAX_QUERY_CHARS = 256;

export interface ReadSearch {
  values: SearchValues;
  /** What the store is asked; undefined when a field has a problem (nothing is searched). */
  search: SessionSearch | undefined;
  problems: FieldProblem[];
}

export const SEARCH_LABELS: Readonly<Record<SearchField, string>> = {
  q: 'Search for',
  by: 'Search by',
  match: 'Match',
  after: 'Page',
};

/**
 * The search a request asks for. An empty text lists every session (a page at a time). A whole address or
 * MAC is normalised as the store spells it (`AA-BB-…` finds `aa:bb:…`); the start of one is only lower-cased
 * and checked for characters an address cannot have, so `10.0.0.` finds every address it begins.
 */
export function readSearch(params: ReadonlyMap<string, string>): ReadSearch {
  const problems: FieldProblem[] = [];
  const q = (params.get('q') ?? '').trim();
  const byText = params.get('by') ?? 'user';
  const matchText = params.get('match') ?? 'exact';
  const by = (SESSION_SEARCH_FIELDS as readonly string[]).includes(byText)
    ? (byText as SessionSearchField)
    : undefined;
  const match = (SEARCH_MATCHES as readonly string[]).includes(matchText)
    ? (matchText as SearchMatch)
    : undefined;
  if (by === undefined)
    problems.push({
      field: 'by',
      message: `${showValue(byText)} is not one of ${SESSION_SEARCH_FIELDS.join(', ')}`,
    });
  if (match === undefined)
    problems.push({ field: 'match', message: `${showValue(matchText)} is not one of exact, prefix` });
  const values: SearchValues = { q, by: by ?? 'user', match: match ?? 'exact' };
  let text = q;
  if (q.length > MAX_QUERY_CHARS) {
    problems.push({ field: 'q', message: `${showValue(q)} is longer than ${MAX_QUERY_CHARS} characters` });
  } else if (by !== undefined && q !== '') {
    const normal = normalised(by, q, match === 'prefix');
    if (normal === undefined) problems.push({ field: 'q', message: notA(by, q, match === 'prefix') });
    else text = normal;
  }
  const afterText = params.get('after');
  const after = afterText === undefined || afterText === '' ? undefined : keyOf(afterText);
  if (after === null)
    problems.push({ field: 'after', message: `${showValue(afterText ?? '')} is not a session key` });
  if (problems.length > 0) return { values, search: undefined, problems };
  return {
    values,
    problems,
    search: {
      // Nothing typed: every session, which every user name starts with.
      by: q === '' ? 'user' : values.by,
      text,
      prefix: q === '' || values.match === 'prefix',
      limit: PAGE_SIZE,
      ...(after === undefined || after === null ? {} : { after }),
    },
  };
}

function normalised(by: SessionSearchField, q: string, prefix: boolean): string | undefined {
  switch (by) {
    case 'user':
      return q;
    case 'ip':
      return prefix ? (/^[0-9A-Fa-f:.]+$/.test(q) ? q.toLowerCase() : undefined) : normaliseIp(q);
    case 'mac':
      return prefix
        ? /^[0-9A-Fa-f:-]+$/.test(q)
          ? q.toLowerCase().replaceAll('-', ':')
          : undefined
        : normaliseMac(q);
  }
}

function notA(by: SessionSearchField, q: string, prefix: boolean): string {
  const what = by === 'ip' ? 'an IP address' : 'a MAC address';
  return prefix
    ? `${showValue(q)} cannot start ${what} (hex digits, ":"${by === 'ip' ? ' and "."' : ' and "-"'} only)`
    : `${showValue(q)} is not ${what}${by === 'mac' ? ' (six pairs of hex digits, as aa:bb:cc:dd:ee:ff)' : ''}`;
}

/** `ip:ADDRESS` or `mac:MAC`, as the page's links and End buttons write a session's key; null if not one. */
export function keyOf(text: string): SessionKey | null {
  const colon = text.indexOf(':');
  const kind = text.slice(0, colon);
  const rest = text.slice(colon + 1);
  if (colon < 0 || text.length > 64) return null;
  const value = kind === 'ip' ? normaliseIp(rest) : kind === 'mac' ? normaliseMac(rest) : undefined;
  return value === undefined || value !== rest ? null : { kind: kind as KeyKind, value };
}

export const keyText = (key: SessionKey): string => `${key.kind}:${key.value}`;

/** The query string of a search (and of its next page). */
export function searchQuery(values: SearchValues, after?: SessionKey): string {
  const query = new URLSearchParams({ q: values.q, by: values.by, match: values.match });
  if (after !== undefined) query.set('after', keyText(after));
  return query.toString();
}
