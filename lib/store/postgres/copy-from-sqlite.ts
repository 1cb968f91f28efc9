import postgres from 'postgres';
import { DoormanError } from '../../errors.ts';
import type { AdminSessionRow, AdminUserRow } from '../admin-rules.ts';
import type { ApiKeyRow } from '../api-key-rules.ts';
import { eventsOf, type StoredPage } from '../../audit/pages.ts';
import type { Db } from '../database.ts';
import { insertAudit } from './audit.ts';
import { takeChange } from './changes.ts';
import type { Sql, Tx } from './connect.ts';
import {
  SHARED_SETTINGS,
  settingsAfterReplace,
  toPgAudit,
  type CopyPlan,
  type SqliteAuditRow,
  type SqliteDeviceGroupRow,
  type SqliteRows,
  type SqliteSessionRow,
  type SqliteSettingsRow,
} from './copy.ts';
import type { ReplicatedTable } from './schema.ts';
import { deleteSessions } from './session-deletions.ts';
import { TAKE_ORDER } from './write.ts';

/**
 * The two ends of `doorman store copy` (the row mapping between them is copy.ts): the shared tables and the
 * audit trail read from a SQLite DB, and written into PostgreSQL in one transaction.
 */

/** The tables a copy writes, as the command reports them. */
export const COPIED_TABLES = [
  'sessions',
  'api_keys',
  'admin_users',
  'admin_sessions',
  'device_groups',
  'settings',
  'audit_events',
] as const;
export type CopiedTable = (typeof COPIED_TABLES)[number];
export type CopyCounts = Record<CopiedTable, number>;

export interface CopyResult {
  copied: CopyCounts;
  /** What the target held and --replace deleted (all zero otherwise). */
  replaced: CopyCounts;
}

/** Rows per INSERT: PostgreSQL takes at most 65,535 parameters in one statement. */
const ROWS_PER_STATEMENT = 2000;

/**
 * The shared tables of a SQLite DB (open it read-only), in one read transaction: one consistent state even
 * while a running Doorman writes to it.
 */
export function readSqliteRows(db: Db): SqliteRows {
  const all = <Row>(query: string): Row[] => db.prepare<[], Row>(query).all();
  return db.transaction(() => ({
    sessions: all<SqliteSessionRow>(`SELECT id, key_kind, key, username, source, created_at, last_seen,
      expires_at, idle_timeout, mac FROM sessions ORDER BY id`),
    apiKeys: all<ApiKeyRow>(`SELECT name, key_id, secret_hash, created_at, last_used_at, revoked_at
      FROM api_keys ORDER BY id`),
    adminUsers: all<AdminUserRow>(
      'SELECT name, password_hash, created_at, updated_at FROM admin_users ORDER BY name',
    ),
    adminSessions: all<AdminSessionRow>(`SELECT token_hash, user_name, csrf_token, created_at, expires_at
      FROM admin_sessions ORDER BY created_at`),
    deviceGroups: all<SqliteDeviceGroupRow>(
      'SELECT id, name, cidrs, active, created_at, updated_at FROM device_groups ORDER BY id',
    ),
    settings: all<SqliteSettingsRow>('SELECT name, value, updated_at FROM settings ORDER BY name'),
  }))();
}

/**
 * The audit trail of a SQLite DB (its pages, schema 9: lib/audit/pages.ts), in the order it was written, about
 * `rows` events at a time (keyset pages on the pages' ids): read as the copy writes it, never all in memory.
 * Run it inside inSqliteSnapshot with the shared rows' read.
 */
/** Audit pages read a statement (each at most PAGE_EVENTS events, usually tens). */
const PAGES_PER_READ = 64;

export function* readSqliteAudit(db: Db, rows = ROWS_PER_STATEMENT): Generator<SqliteAuditRow[]> {
  const pages = db.prepare<[number, number], StoredPage>(
    'SELECT id, at_first AS atFirst, box, events FROM audit_pages WHERE id > ? ORDER BY id LIMIT ?',
  );
  let after = -1;
  let batch: SqliteAuditRow[] = [];
  for (;;) {
    const read = pages.all(after, PAGES_PER_READ);
    for (const page of read) {
      for (const event of eventsOf(page)) {
        const { user, address, detail, ...rest } = event;
        batch.push({
          ...rest,
          username: user ?? null,
          address: address ?? null,
          detail: JSON.stringify(detail),
        });
      }
      if (batch.length >= rows) {
        yield batch;
        batch = [];
      }
      after = page.id;
    }
    if (read.length === 0) break;
  }
  if (batch.length > 0) yield batch;
}

/**
 * `work` with one read transaction of `db` held open across its awaits: what it reads before writing
 * (readSqliteRows) and what it reads as it writes (readSqliteAudit) are one state of the DB, even while a
 * running Doorman writes to it.
 */
export async function inSqliteSnapshot<T>(db: Db, work: () => Promise<T>): Promise<T> {
  db.exec('BEGIN');
  try {
    return await work();
  } finally {
    db.exec('ROLLBACK');
  }
}

/**
 * Write `plan` into a migrated PostgreSQL store, all or nothing, in one transaction. It first takes the change
 * number of every shared table: until it commits no box writes them, and at commit every box's replica is
 * told, reads the new rows by those numbers, and (for sessions) the recorded deletions of the replaced ones.
 * `audit`: the audit trail's rows in batches, oldest first (readSqliteAudit), inserted in that order.
 * A target that already holds any shared row or audit event is refused (CONFLICT, nothing written) unless
 * `replace`: then those rows are deleted first, in the same transaction.
 */
/** How long the copy waits for a lock another transaction holds before it fails (nothing copied). */
const LOCK_WAIT_MS = 10_000;

export async function copyIntoPostgres(
  sql: Sql,
  plan: CopyPlan,
  options: { replace: boolean; now: number; audit: Iterable<readonly SqliteAuditRow[]> },
): Promise<CopyResult> {
  try {
    // Not write.ts's transaction, whose answer is due within 5 s: an audit trail of millions of rows takes
    // longer to copy (or, with --replace, to delete), as a big migration does (migrate.ts). For the same reason
    // no statement_timeout; but a lock another holds (a migration, a second copy) is waited for LOCK_WAIT_MS at
    // most, so the copy fails rather than queue every box's writes behind it.
    return (await sql.begin(async (tx) => {
      await tx`SELECT set_config('statement_timeout', '0', true)`;
      await tx`SELECT set_config('lock_timeout', ${String(LOCK_WAIT_MS)}, true)`;
      // The audit trail first, before any change number is taken: it is no replicated table, so the boxes'
      // writes go on while it is copied (a million events take seconds); only the shared rows below hold them.
      const before = await heldRows(tx);
      if (!options.replace && COPIED_TABLES.some((t) => before[t] > 0)) throw refusal(before);
      if (options.replace && before.audit_events > 0) await tx`DELETE FROM audit_events`;
      let auditEvents = 0;
      for (const rows of options.audit) {
        await insertAudit(tx, rows.map(toPgAudit));
        auditEvents += rows.length;
      }
      // Every writer takes its numbers in TAKE_ORDER: a box writing meanwhile waits for the rest of the copy,
      // no deadlock. The shared rows are counted again under them (a box may have written since the first
      // count); the audit trail's count is the one from before this copy's own events.
      const change = new Map<ReplicatedTable, number>();
      for (const tab of TAKE_ORDER) change.set(tab, await takeChange(tx, tab));
      const stamp = (tab: ReplicatedTable) => change.get(tab) ?? 0;
      const held = { ...(await heldRows(tx)), audit_events: before.audit_events };
      let settings = plan.settings;
      if (COPIED_TABLES.some((t) => held[t] > 0)) {
        if (!options.replace) throw refusal(held);
        const previous = await tx<{ name: string; updated_at: number }[]>`
          SELECT name, updated_at FROM settings WHERE name = ANY(${[...SHARED_SETTINGS]}::text[])`;
        settings = settingsAfterReplace(settings, new Map(previous.map((r) => [r.name, r.updated_at])));
        await tx`DELETE FROM api_keys`;
        await tx`DELETE FROM admin_sessions`;
        await tx`DELETE FROM admin_users`;
        await tx`DELETE FROM settings WHERE name = ANY(${[...SHARED_SETTINGS]}::text[])`;
        await tx`DELETE FROM device_groups`;
        await deleteSessions(tx, { change: stamp('sessions'), now: options.now }, tx`true`);
      }
      await insert(tx, 'api_keys', plan.apiKeys, stamp('api_keys'));
      await insert(tx, 'admin_users', plan.adminUsers, stamp('admins'));
      await insert(tx, 'admin_sessions', plan.adminSessions, stamp('admins'));
      await insert(
        tx,
        'settings',
        settings.map((s) => ({ ...s, value: tx.json(s.value) })),
        stamp('settings'),
      );
      await insert(
        tx,
        'device_groups',
        plan.deviceGroups.map((g) => ({ ...g, cidrs: tx.json(g.cidrs) })),
        stamp('device_groups'),
      );
      await insert(tx, 'sessions', plan.sessions, stamp('sessions'));
      const copied = {
        sessions: plan.sessions.length,
        api_keys: plan.apiKeys.length,
        admin_users: plan.adminUsers.length,
        admin_sessions: plan.adminSessions.length,
        device_groups: plan.deviceGroups.length,
        settings: settings.length,
        audit_events: auditEvents,
      };
      return { copied, replaced: held };
    })) as CopyResult;
  } catch (error) {
    // A row PostgreSQL's constraints refuse (SQLite checks less: a name that differs from another only beyond
    // ASCII case, an over-long user name). Its message names the table and constraint; its detail would show
    // the row, which may hold a hash, so it is left out.
    if (error instanceof postgres.PostgresError)
      throw new DoormanError(
        error.code.startsWith('22') || error.code.startsWith('23') ? 'INVALID_INPUT' : 'STORE_UNAVAILABLE',
        `PostgreSQL refused the copy, nothing was copied: ${error.message}`,
        { cause: error },
      );
    throw error;
  }
}

/** The shared rows the target holds now. */
async function heldRows(tx: Tx): Promise<CopyCounts> {
  const [row] = await tx<CopyCounts[]>`SELECT
    (SELECT count(*) FROM sessions) AS sessions,
    (SELECT count(*) FROM api_keys) AS api_keys,
    (SELECT count(*) FROM admin_users) AS admin_users,
    (SELECT count(*) FROM admin_sessions) AS admin_sessions,
    (SELECT count(*) FROM device_groups) AS device_groups,
    (SELECT count(*) FROM settings WHERE name = ANY(${[...SHARED_SETTINGS]}::text[])) AS settings,
    (SELECT count(*) FROM audit_events) AS audit_events`;
  if (row === undefined) throw new Error('SELECT count(*) gave no row');
  return row;
}

const refusal = (held: CopyCounts): DoormanError =>
  new DoormanError(
    'CONFLICT',
    `the PostgreSQL store already holds ${COPIED_TABLES.filter((t) => held[t] > 0)
      .map((t) => `${t} (${held[t]})`)
      .join(', ')}: nothing copied (--replace empties these tables first)`,
  );

/**
 * Insert `rows`, each stamped with `change`, in statements of ROWS_PER_STATEMENT. The columns are the rows'
 * own keys (copy.ts's types name exactly the table's columns but `id`, which PostgreSQL gives).
 */
async function insert(tx: Tx, table: CopiedTable, rows: readonly object[], change: number): Promise<void> {
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
    const chunk: Record<string, postgres.ParameterOrJSON<never>>[] = rows
      .slice(i, i + ROWS_PER_STATEMENT)
      .map((row) => ({ ...row, change }));
    await tx`INSERT INTO ${tx(table)} ${tx(chunk)}`;
  }
}
