import { AUDIT_FIELD_MAX, isAuditKind } from '../../lib/audit/event.ts';
import { type AuditCursor, type AuditQuery, parseCursor, showCursor } from '../../lib/audit/query.ts';
import { DoormanError } from '../../lib/errors.ts';
import { normaliseIp } from '../../lib/net/address.ts';
import type { FieldProblem } from '../../lib/validation/problems.ts';

/** Events a page of the Audit screen shows. */
export const AUDIT_PAGE_SIZE = 50;

/** The filter form's fields (GET: the query string), and the page cursor. */
export const AUDIT_FIELDS = ['user', 'address', 'kind', 'from', 'to'] as const;
export type AuditFilterValues = Record<(typeof AUDIT_FIELDS)[number], string>;

export const EMPTY_FILTERS: AuditFilterValues = { user: '', address: '', kind: '', from: '', to: '' };

/** `YYYY-MM-DDTHH:MM` (a datetime-local control's value) or `YYYY-MM-DD`, read as UTC. */
const TIME = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2}))?)?$/;

function utcTime(text: string): number | undefined {
  const m = TIME.exec(text);
  if (m === null) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1).map((part) => Number(part ?? 0));
  const ms = Date.UTC(year ?? 0, (month ?? 1) - 1, day ?? 1, hour ?? 0, minute ?? 0, second ?? 0);
  const back = new Date(ms);
  // 2026-02-31 is not a date (Date.UTC would roll it over into March).
  return back.getUTCDate() === day && back.getUTCMonth() === (month ?? 1) - 1 ? ms : undefined;
}

/**
 * The Audit screen's filters from the query string: every problem at once (field and message), nothing
 * queried while there is one. An address is compared in its normal form (an IPv6 address as the store keeps
 * it); the user as typed (trimmed); the times as UTC.
 */
export function readAuditFilters(search: URLSearchParams): {
  values: AuditFilterValues;
  query: Omit<AuditQuery, 'limit'>;
  problems: FieldProblem[];
} {
  const values = { ...EMPTY_FILTERS };
  for (const field of AUDIT_FIELDS)
    values[field] = (search.get(field) ?? '').trim().slice(0, AUDIT_FIELD_MAX + 1);
  const problems: FieldProblem[] = [];
  const query: Omit<AuditQuery, 'limit'> = {};
  if (values.user !== '') {
    if (values.user.length > AUDIT_FIELD_MAX)
      problems.push({ field: 'user', message: `at most ${AUDIT_FIELD_MAX} characters` });
    else query.user = values.user;
  }
  if (values.address !== '') {
    const address = normaliseIp(values.address);
    if (address === undefined) problems.push({ field: 'address', message: 'not an IP address' });
    else query.address = address;
  }
  if (values.kind !== '') {
    if (!isAuditKind(values.kind)) problems.push({ field: 'kind', message: 'no such kind of event' });
    else query.kind = values.kind;
  }
  for (const field of ['from', 'to'] as const) {
    if (values[field] === '') continue;
    const at = utcTime(values[field]);
    if (at === undefined)
      problems.push({ field, message: 'not a time: give YYYY-MM-DD or YYYY-MM-DDTHH:MM (UTC)' });
    // A day alone as the end means through that day.
    else query[field] = field === 'to' && !values.to.includes('T') ? at + 86_400_000 : at;
  }
  if (query.from !== undefined && query.to !== undefined && query.to <= query.from)
    problems.push({ field: 'to', message: 'must be after From' });
  const before = search.get('before');
  if (before !== null && before !== '') {
    try {
      query.before = parseCursor(before);
    } catch (error) {
      if (!(error instanceof DoormanError)) throw error;
      problems.push({ field: 'before', message: 'not a page of this screen: start again from the newest' });
    }
  }
  return { values, query, problems };
}

/** The screen's URL for these filters (the empty ones left out), at the page older than `before`. */
export function auditHref(path: string, values: AuditFilterValues, before?: AuditCursor): string {
  const search = new URLSearchParams();
  for (const field of AUDIT_FIELDS) if (values[field] !== '') search.set(field, values[field]);
  if (before !== undefined) search.set('before', showCursor(before));
  const text = search.toString();
  return text === '' ? path : `${path}?${text}`;
}
