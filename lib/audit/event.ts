/**
 * The audit trail's record: what happened (`kind`), when, on which box, who did it (`actor`), which user it
 * was about, from which client address, and a small detail object. Pure: the store keeps these
 * (lib/store/store.ts AuditRepository) and the sinks ship them as JSON lines (lib/audit/sink.ts).
 *
 * Never a password, key, token or ticket: `detail` is cleaned here (auditDetail) on its way in, whatever the
 * caller put in it: a field whose name says secret is redacted, strings and the object are capped.
 */

/** Every kind, stable (a SIEM filters on them): identity events first, then the admins' actions. */
export const AuditKinds = [
  // Identity events: a session began, was replaced, or ended.
  'api.login',
  'api.logout',
  'api.replaced',
  'portal.sign-in',
  'portal.agreement',
  'portal.registration',
  'session.expired',
  'sessions.cleared',
  'session.ended',
  // Administrators' actions.
  'settings.saved',
  'api-key.created',
  'api-key.revoked',
  'admin.created',
  'admin.removed',
  'admin.password-reset',
  'admin.sign-in',
  'admin.sign-in-failed',
  'seamless.enabled',
  'seamless.disabled',
] as const;
export type AuditKind = (typeof AuditKinds)[number];

export const isAuditKind = (value: string): value is AuditKind =>
  (AuditKinds as readonly string[]).includes(value);

/** Why a session expired (detail.reason of session.expired). */
export const EXPIRY_REASONS = ['idle', 'hard', 'date'] as const;
export type ExpiryReason = (typeof EXPIRY_REASONS)[number];

/**
 * Who did it, as one string: `api-key:<key name>` (a login API call), `admin:<name>` (the admin screens),
 * `cli:<OS user>` (a doorman command), `user:<name>` (the splash page's own user), `portal` (an anonymous
 * client accepting the usage agreement), `system` (serve's purge).
 */
export type AuditActor = string;

/** What a caller records: the store stamps the time and the box. */
export interface AuditInput {
  kind: AuditKind;
  actor: AuditActor;
  /** The end user the event is about (a session's user name), when there is one. */
  user?: string;
  /** The client address the request came from (or the session's key for an expiry). */
  address?: string;
  detail?: Readonly<Record<string, unknown>>;
  /** When it happened, ms; default the store's clock (an expiry gives the moment the session ended). */
  at?: number;
}

/** A recorded event. `id` orders events of one millisecond (keyset paging, see lib/audit/query.ts). */
export interface AuditEvent {
  id: number;
  at: number;
  box: string;
  kind: AuditKind;
  actor: string;
  user: string | undefined;
  address: string | undefined;
  detail: Record<string, unknown>;
}

/** An event as written, before the store gives it an id. */
export type AuditRecord = Omit<AuditEvent, 'id'>;

/** Caps: a string field, a detail value, the detail's keys, its JSON. */
export const AUDIT_FIELD_MAX = 256;
const DETAIL_VALUE_MAX = 256;
const DETAIL_KEYS_MAX = 32;
export const DETAIL_JSON_MAX = 4096;

/** Field names whose values are secrets: redacted whatever they hold. */
const SECRET_NAME = /pass(?:word|phrase)?|secret|token|ticket|keytab|credential|^key$|api_?key$|cookie|hash/i;
export const REDACTED = '[redacted]';

/** A string cut to `max` characters (one ellipsis marks the cut). */
const cap = (value: string, max: number): string =>
  value.length <= max ? value : `${value.slice(0, max - 1)}…`;

/** isSecretName's answers by name: the names are the code's own (detail keys, settings fields), a few dozen. */
const secretNames = new Map<string, boolean>();
const SECRET_NAMES_MAX = 1024;

/** Whether a field of this name may hold a secret (the settings diff redacts these too). */
export const isSecretName = (name: string): boolean => {
  let secret = secretNames.get(name);
  if (secret === undefined) {
    secret = SECRET_NAME.test(name);
    if (secretNames.size < SECRET_NAMES_MAX) secretNames.set(name, secret);
  }
  return secret;
};

/**
 * Whether a cleaned detail is certainly under DETAIL_JSON_MAX without writing it out (a login's replaced
 * user and source, on every replacing login): at most two keys (64 characters each once capped) with values
 * that are not objects (a string capped to DETAIL_VALUE_MAX); at most 6 characters of JSON a character
 * (`\u0000`), that is under 2 × 6 × (64 + 256) + 16.
 */
const surelySmall = (detail: Record<string, unknown>): boolean => {
  let keys = 0;
  for (const name in detail) {
    const value = detail[name];
    if (++keys > 2 || (value !== null && typeof value === 'object')) return false;
  }
  return true;
};

/**
 * The detail as kept: at most DETAIL_KEYS_MAX keys, two levels deep (a settings change is
 * `{changes: {field: {from, to}}}`), each string capped, secrets by name redacted, and the whole under
 * DETAIL_JSON_MAX characters of JSON (past it, `{truncated: true}` and the keys that fit).
 */
export function auditDetail(detail: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> {
  if (detail === undefined) return {};
  const cleaned = cleanObject(detail, 0);
  if (surelySmall(cleaned) || JSON.stringify(cleaned).length <= DETAIL_JSON_MAX) return cleaned;
  const fitting: Record<string, unknown> = { truncated: true };
  for (const [name, value] of Object.entries(cleaned)) {
    if (JSON.stringify({ ...fitting, [name]: value }).length > DETAIL_JSON_MAX) break;
    fitting[name] = value;
  }
  return fitting;
}

function cleanObject(object: Readonly<Record<string, unknown>>, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  // Own keys in Object.entries' order, the first DETAIL_KEYS_MAX, without its arrays (a replacing login's detail).
  let keys = 0;
  for (const name in object) {
    if (!Object.hasOwn(object, name)) continue;
    if (keys++ === DETAIL_KEYS_MAX) break;
    out[cap(name, 64)] = isSecretName(name) ? REDACTED : cleanValue(object[name], depth);
  }
  return out;
}

function cleanValue(value: unknown, depth: number): unknown {
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (typeof value === 'string') return cap(value, DETAIL_VALUE_MAX);
  if (Array.isArray(value)) {
    return depth >= 2
      ? `[${value.length} items]`
      : value.slice(0, DETAIL_KEYS_MAX).map((item) => cleanValue(item, depth + 1));
  }
  if (typeof value === 'object') {
    return depth >= 2 ? '{…}' : cleanObject(value as Record<string, unknown>, depth + 1);
  }
  return cap(String(value), DETAIL_VALUE_MAX);
}

/** The record of an input: capped fields, cleaned detail, `at` and `box` filled in. */
export function auditRecord(input: AuditInput, at: number, box: string): AuditRecord {
  return {
    at: input.at ?? at,
    box: cap(box, AUDIT_FIELD_MAX),
    kind: input.kind,
    actor: cap(input.actor, AUDIT_FIELD_MAX),
    user: input.user === undefined ? undefined : cap(input.user, AUDIT_FIELD_MAX),
    address: input.address === undefined ? undefined : cap(input.address, AUDIT_FIELD_MAX),
    detail: auditDetail(input.detail),
  };
}

/** Several inputs (one or a list), as records stamped at `at`. */
export function auditRecords(
  inputs: AuditInput | readonly AuditInput[] | undefined,
  at: number,
  box: string,
): AuditRecord[] {
  if (inputs === undefined) return [];
  if (!Array.isArray(inputs)) return [auditRecord(inputs as AuditInput, at, box)];
  return (inputs as readonly AuditInput[]).map((input) => auditRecord(input, at, box));
}

/**
 * One JSON line of the file and syslog sinks: the time as ISO 8601 (UTC), fields absent rather than null.
 * `{"at":"2026-11-27T04:00:00.000Z","box":"proxy1","kind":"api.login","actor":"api-key:wifi",...}`
 */
export function auditJsonLine(record: AuditRecord): string {
  return JSON.stringify({
    at: new Date(record.at).toISOString(),
    box: record.box,
    kind: record.kind,
    actor: record.actor,
    ...(record.user === undefined ? {} : { user: record.user }),
    ...(record.address === undefined ? {} : { address: record.address }),
    ...(Object.keys(record.detail).length === 0 ? {} : { detail: record.detail }),
  });
}

/** The same events with `detail.group` set (an agreement's Device Group, decided inside the write). */
export function withGroup(
  audit: AuditInput | readonly AuditInput[] | undefined,
  group: string,
): AuditInput[] | undefined {
  if (audit === undefined) return undefined;
  const list: readonly AuditInput[] = Array.isArray(audit) ? audit : [audit as AuditInput];
  return list.map((input) => ({ ...input, detail: { ...input.detail, group } }));
}
