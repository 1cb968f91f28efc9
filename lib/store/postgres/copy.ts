import type postgres from 'postgres';
import { type AuditRecord, isAuditKind } from '../../audit/event.ts';
import { DoormanError } from '../../errors.ts';
import type { AdminSessionRow, AdminUserRow } from '../admin-rules.ts';
import type { ApiKeyRow } from '../api-key-rules.ts';
import type { AuditColumns } from '../audit-store.ts';
import type { SessionRow } from './session-table.ts';

/**
 * `doorman store copy`: what a one-box site's SQLite DB hands to a PostgreSQL store, row by row. Pure: the
 * rows come in as SQLite holds them (lib/store/migrations.ts) and go out as PostgreSQL's tables take them
 * (schema.ts), without the change number, which only the copying transaction can take
 * (copy-from-sqlite.ts does the reading and the writing).
 *
 * What is shared by every box goes: live sessions, API keys, admins and their unexpired sign-ins, Device
 * Groups, the directory and portal settings. What stays per box stays (the seamless settings, the
 * password-guessing counters, the NTLM client counts), and so do the directory's bind password (a file of the
 * box's own) and whatever has run out (an expired session or sign-in would only be purged there).
 *
 * The audit trail goes too, every event with its own time and box (the box that recorded it): its history is the
 * site's. It may hold millions of rows (one a login, kept audit.retentionDays), so it is not in SqliteRows but
 * read and written a batch at a time (copy-from-sqlite.ts), each row mapped by toPgAudit.
 *
 * Ids: PostgreSQL gives sessions, API keys, Device Groups and audit events new ones (identity columns), since
 * no other table refers to them; an admin sign-in refers to its admin by name, which is kept. Audit events go
 * in oldest first by (at, id), so their new ids keep the order of events of one millisecond.
 */

/**
 * The settings rows every box shares (the directory settings store's row and the portal settings store's, on
 * either engine); any other row of `settings` (seamless) stays on the box.
 */
export const SHARED_SETTINGS = ['directory', 'portal'] as const;

/** A sessions row of SQLite (schema 7): PostgreSQL's columns but the change number. */
export type SqliteSessionRow = Omit<SessionRow, 'change'>;

/** A device_groups row of SQLite: JSON text and 0/1 where PostgreSQL has jsonb and boolean. */
export interface SqliteDeviceGroupRow {
  id: number;
  name: string;
  cidrs: string;
  active: number;
  created_at: number;
  updated_at: number;
}

/** A settings row of SQLite: the value is JSON text. */
export interface SqliteSettingsRow {
  name: string;
  value: string;
  updated_at: number;
}

/** An audit_events row of SQLite (schema 8): the detail is JSON text. */
export type SqliteAuditRow = AuditColumns & { detail: string };

/** The shared tables as read from SQLite, in one read transaction. */
export interface SqliteRows {
  sessions: SqliteSessionRow[];
  apiKeys: ApiKeyRow[];
  adminUsers: AdminUserRow[];
  adminSessions: AdminSessionRow[];
  deviceGroups: SqliteDeviceGroupRow[];
  settings: SqliteSettingsRow[];
}

export type PgSessionInsert = Omit<SqliteSessionRow, 'id'>;

export interface PgDeviceGroupInsert {
  name: string;
  cidrs: string[];
  active: boolean;
  created_at: number;
  updated_at: number;
}

export interface PgSettingsInsert {
  name: string;
  /** The parsed JSON: it goes in as jsonb. */
  value: postgres.JSONValue;
  updated_at: number;
}

/** The rows to insert, and what was read but stays behind. */
export interface CopyPlan {
  sessions: PgSessionInsert[];
  apiKeys: ApiKeyRow[];
  adminUsers: AdminUserRow[];
  adminSessions: AdminSessionRow[];
  deviceGroups: PgDeviceGroupInsert[];
  settings: PgSettingsInsert[];
  left: { expiredSessions: number; expiredAdminSessions: number; settings: string[] };
}

/**
 * The rows to insert into PostgreSQL, as of `now` (ms): sessions before their hard expiry, sign-ins before
 * theirs, the shared settings rows; JSON text parsed (it goes in as jsonb), 0/1 made booleans. A value SQLite
 * should never have held (its CHECKs say so) is an INVALID_INPUT naming the row, not a half-right copy.
 */
export function planCopy(rows: SqliteRows, now: number): CopyPlan {
  const sessions = rows.sessions.filter((s) => s.expires_at === null || s.expires_at > now);
  const adminSessions = rows.adminSessions.filter((s) => s.expires_at > now);
  const shared = (name: string) => (SHARED_SETTINGS as readonly string[]).includes(name);
  return {
    sessions: sessions.map(({ id: _id, ...rest }) => rest),
    apiKeys: rows.apiKeys.map((k) => ({ ...k })),
    adminUsers: rows.adminUsers.map((u) => ({ ...u })),
    adminSessions: adminSessions.map((s) => ({ ...s })),
    deviceGroups: rows.deviceGroups.map(toPgDeviceGroup),
    settings: rows.settings
      .filter((s) => shared(s.name))
      .map((s) => ({
        name: s.name,
        value: parseJson(s.value, `settings row ${s.name}`),
        updated_at: s.updated_at,
      })),
    left: {
      expiredSessions: rows.sessions.length - sessions.length,
      expiredAdminSessions: rows.adminSessions.length - adminSessions.length,
      settings: rows.settings.map((s) => s.name).filter((name) => !shared(name)),
    },
  };
}

function toPgDeviceGroup(row: SqliteDeviceGroupRow): PgDeviceGroupInsert {
  const what = `Device Group ${JSON.stringify(row.name)}`;
  const cidrs = parseJson(row.cidrs, what);
  if (!Array.isArray(cidrs) || !cidrs.every((c) => typeof c === 'string'))
    throw new DoormanError('INVALID_INPUT', `${what}: cidrs is not a list of networks`);
  if (row.active !== 0 && row.active !== 1)
    throw new DoormanError('INVALID_INPUT', `${what}: active is ${row.active}, not 0 or 1`);
  return {
    name: row.name,
    cidrs,
    active: row.active === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * An audit event as PostgreSQL's store inserts it (audit.ts insertAudit): its own time and box, no id, the
 * detail parsed (it goes in as jsonb). A kind this Doorman does not know (written by a newer one) or a detail
 * that is not a JSON object is an INVALID_INPUT naming the event, as for the other tables.
 */
export function toPgAudit(row: SqliteAuditRow): AuditRecord {
  const what = `audit event ${row.id}`;
  if (!isAuditKind(row.kind))
    throw new DoormanError(
      'INVALID_INPUT',
      `${what}: kind ${JSON.stringify(row.kind)} is unknown to this Doorman`,
    );
  const detail: unknown = parseJson(row.detail, what);
  if (!isObject(detail)) throw new DoormanError('INVALID_INPUT', `${what}: detail is not a JSON object`);
  return {
    at: row.at,
    box: row.box,
    kind: row.kind,
    actor: row.actor,
    user: row.username ?? undefined,
    address: row.address ?? undefined,
    detail,
  };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

function parseJson(text: string, what: string): postgres.JSONValue {
  try {
    return JSON.parse(text) as postgres.JSONValue;
  } catch {
    throw new DoormanError('INVALID_INPUT', `${what}: not valid JSON`);
  }
}

/**
 * updated_at of a settings row is its version, which only ever goes up (settings-row.ts): a --replace over
 * rows written later than the copied ones must not make it go back, or a box comparing versions could miss
 * the change. `previous`: the replaced rows' updated_at by name.
 */
export function settingsAfterReplace(
  settings: readonly PgSettingsInsert[],
  previous: ReadonlyMap<string, number>,
): PgSettingsInsert[] {
  return settings.map((s) => {
    const before = previous.get(s.name);
    return before === undefined || s.updated_at > before ? s : { ...s, updated_at: before + 1 };
  });
}
