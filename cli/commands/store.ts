import { type Clock, systemClock } from '../../lib/clock.ts';
import { dbPath } from '../../lib/config/load.ts';
import { type Config, configSchema } from '../../lib/config/schema.ts';
import { DoormanError, showValue } from '../../lib/errors.ts';
import { openDatabase, type Db } from '../../lib/store/database.ts';
import { SCHEMA_VERSION } from '../../lib/store/migrations.ts';
import {
  connectPostgres,
  readPasswordFile,
  showUrl,
  type PostgresSettings,
  type Sql,
} from '../../lib/store/postgres/connect.ts';
import { planCopy, type CopyPlan } from '../../lib/store/postgres/copy.ts';
import {
  COPIED_TABLES,
  copyIntoPostgres,
  inSqliteSnapshot,
  readSqliteAudit,
  readSqliteRows,
  type CopiedTable,
  type CopyCounts,
  type CopyResult,
} from '../../lib/store/postgres/copy-from-sqlite.ts';
import { migratePostgres } from '../../lib/store/postgres/migrate.ts';
import { postgresReport } from '../../lib/store/postgres/status.ts';
import { sqliteReport, type StoreReport } from '../../lib/store/store-report.ts';
import { becomeServiceUser } from '../../lib/system/service-user.ts';
import {
  actionOf,
  type Command,
  CONFIG_HELP,
  CONFIG_OPTION,
  configFrom,
  EXIT,
  out,
  parse,
  UsageError,
} from '../command.ts';

const help = `Usage: doorman store status [--json]
       doorman store migrate
       doorman store copy --to URL [--password-file FILE] [--replace]

The store holds what every box of a site shares (sessions, API keys, admins and their sign-ins, Device
Groups, the directory and portal settings): SQLite in stateDir for one box (the default), or a PostgreSQL
database for several (config "store").
  status    engine, where, whether it can be reached, its schema version and the one this Doorman expects;
            for PostgreSQL also the server answering, its role (primary or standby), a standby's
            replication lag, the change number of each shared table, and the session rows (all, and
            before their hard expiry). Exits 1 when the store cannot be reached
  migrate   bring the store's schema up to this Doorman's: to upgrade the database before the boxes
            (doorman serve migrates at start too)
  copy      copy this box's SQLite DB into the PostgreSQL database at URL, so a one-box site keeps its
            sessions when it grows: live sessions, API keys, admins and their unexpired sign-ins, Device
            Groups, the directory and portal settings, and the audit trail (each event with its own time
            and box), all in one transaction (all or nothing). The database is migrated first; one that
            already holds any of these is refused unless --replace.
            The SQLite DB is only read: stop doorman serve first, or what it writes later stays behind.
            Not copied, as they stay per box: seamless sign-on, the wrong-password counters, and the
            directory's bind password file (copy it to each box)

Options:
      --json                status: one JSON object; every key always present, null when unknown
      --to URL              copy: the database, postgres://USER@HOST[,HOST2...][:PORT]/DATABASE, with
                            ?target_session_attrs=read-write for several hosts; never with a password
      --password-file FILE  copy: the password is the first line of FILE (mode 0600, readable by the
                            service user, as store.passwordFile); without it, PGPASSWORD if set
      --replace             copy: empty the database's shared tables and audit trail first (ended
                            sessions are told to every box reading it)
${CONFIG_HELP}`;

/** Where the command writes and what time it is: the process's stdout and clock, or a test's. */
export interface StoreIo {
  out(line: string): void;
  clock: Clock;
}

const ACTIONS = ['status', 'migrate', 'copy'] as const;
type Action = (typeof ACTIONS)[number];
const COPY_OPTIONS = ['to', 'password-file', 'replace'] as const;

export const storeCommand: Command = {
  name: 'store',
  summary: 'status, migrate and copy the shared store (SQLite or PostgreSQL)',
  help,
  run: (argv) => runStore(argv, { out, clock: systemClock }),
};

export async function runStore(argv: string[], io: StoreIo): Promise<number> {
  const { values, positionals } = parse({
    args: argv,
    options: {
      ...CONFIG_OPTION,
      json: { type: 'boolean', default: false },
      to: { type: 'string' },
      'password-file': { type: 'string' },
      replace: { type: 'boolean', default: false },
    },
    allowPositionals: true,
  });
  if (values.help) return (io.out(help), EXIT.ok);
  const { action } = actionOf('store', positionals, ACTIONS);
  onlyFor(action, 'status', values.json ? ['json'] : []);
  onlyFor(
    action,
    'copy',
    COPY_OPTIONS.filter((o) => values[o] !== undefined && values[o] !== false),
  );
  if (action === 'copy') {
    if (values.to === undefined) throw new UsageError('store copy: --to URL is required');
    const target = postgresTarget(values.to, values['password-file']);
    const { config } = configFrom(values.config);
    becomeServiceUser(config);
    return copy(config, target, values.replace, io);
  }
  const { config } = configFrom(values.config);
  becomeServiceUser(config);
  if (action === 'status') {
    const report = await storeReport(config, io.clock.now());
    if (values.json) io.out(JSON.stringify(report, null, 2));
    else for (const line of reportLines(report)) io.out(line);
    return report.connected ? EXIT.ok : EXIT.failed;
  }
  io.out(await migrate(config));
  return EXIT.ok;
}

/** Options of one action given to another: a usage error naming both. */
function onlyFor(action: Action, owner: Action, given: readonly string[]): void {
  if (action !== owner && given.length > 0)
    throw new UsageError(`store ${action}: --${given[0]} is an option of "store ${owner}"`);
}

/** --to as store.url is checked (no password in it), with --password-file as store.passwordFile. */
function postgresTarget(url: string, passwordFile: string | undefined): PostgresSettings {
  const checked = configSchema.shape.store.safeParse({
    kind: 'postgres',
    url,
    passwordFile: passwordFile ?? null,
  });
  if (!checked.success) {
    const [issue] = checked.error.issues;
    const option = issue?.path[0] === 'passwordFile' ? '--password-file' : '--to';
    // The URL is not shown back: it was refused, maybe for holding a password.
    throw new UsageError(`store copy: ${option}: ${issue?.message ?? 'not valid'}`);
  }
  if (checked.data.kind !== 'postgres') throw new Error('a postgres store setting parsed as another kind');
  return { url: checked.data.url, passwordFile: checked.data.passwordFile };
}

/** The report of the store `config` names, as of `now`. */
async function storeReport(config: Config, now: number): Promise<StoreReport> {
  if (config.store.kind === 'sqlite') return sqliteReport(dbPath(config), now);
  const settings = config.store;
  return withPostgres(settings, (sql) => postgresReport(sql, showUrl(settings.url), now));
}

/** The report as lines of `fact: value`, aligned; only the facts that apply. */
export function reportLines(report: StoreReport): string[] {
  const facts: Array<[string, string]> = [
    ['engine', report.engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'],
    ['where', report.location],
    ['connected', report.connected ? 'yes' : `no: ${report.error ?? 'unknown error'}`],
    ['schema', schemaLine(report)],
  ];
  if (report.server !== null) facts.push(['server', report.server]);
  if (report.role !== null) facts.push(['role', report.role]);
  if (report.role === 'standby')
    facts.push([
      'replication lag',
      report.replicationLagMs === null ? 'unknown (nothing replayed yet)' : `${report.replicationLagMs} ms`,
    ]);
  if (report.changes !== null)
    facts.push([
      'change numbers',
      Object.entries(report.changes)
        .map(([tab, last]) => `${tab} ${last}`)
        .join(', '),
    ]);
  if (report.sessions !== null)
    facts.push([
      'sessions',
      `${report.sessions.rows} rows, ${report.sessions.live} before their hard expiry`,
    ]);
  const width = Math.max(...facts.map(([name]) => name.length)) + 3;
  return facts.map(([name, value]) => `${`${name}:`.padEnd(width)}${value}`);
}

function schemaLine(report: StoreReport): string {
  const expected = report.expectedSchemaVersion;
  if (report.schemaVersion === null) return `unknown (this Doorman: ${expected})`;
  if (report.schemaVersion === expected) return `${expected} (current)`;
  if (report.schemaVersion > expected)
    return `${report.schemaVersion}, newer than this Doorman's ${expected}: upgrade Doorman`;
  return `${report.schemaVersion}, this Doorman needs ${expected}: doorman store migrate`;
}

/** "schema N → M", or "schema M (current)". */
const migrated = (from: number, to: number): string =>
  from === to ? `schema ${to} (current)` : `schema ${from} → ${to}`;

async function migrate(config: Config): Promise<string> {
  if (config.store.kind === 'sqlite') {
    const path = dbPath(config);
    // Read without migrating first, so the line says where it came from; openDatabase then migrates.
    const before = sqliteReport(path, 0).schemaVersion ?? 0;
    openDatabase(path).close();
    return `session DB ${path}: ${migrated(before, SCHEMA_VERSION)}`;
  }
  const settings = config.store;
  const { from, to } = await withPostgres(settings, (sql) => migratePostgres(sql));
  return `PostgreSQL ${showUrl(settings.url)}: ${migrated(from, to)}`;
}

async function copy(
  config: Config,
  target: PostgresSettings,
  replace: boolean,
  io: StoreIo,
): Promise<number> {
  if (target.passwordFile !== null) checkPasswordFile(target.passwordFile);
  const path = dbPath(config);
  const now = io.clock.now();
  const db = openSource(path);
  try {
    // The audit trail is read as it is written, in the snapshot the shared rows were read in.
    const { plan, migration, result } = await inSqliteSnapshot(db, async () => {
      const plan = planCopy(readSqliteRows(db), now);
      return withPostgres(target, async (sql) => {
        const migration = await migratePostgres(sql);
        const audit = readSqliteAudit(db);
        return { plan, migration, result: await copyIntoPostgres(sql, plan, { replace, now, audit }) };
      });
    });
    io.out(`PostgreSQL ${showUrl(target.url)}: ${migrated(migration.from, migration.to)}`);
    for (const line of copyLines(path, plan, result)) io.out(line);
    return EXIT.ok;
  } finally {
    db.close();
  }
}

/** The SQLite DB at `path`, opened read-only (never migrated: it is only read). */
function openSource(path: string): Db {
  try {
    return openDatabase(path, { readonly: true });
  } catch (error) {
    if (error instanceof DoormanError && error.code === 'STORE_UNAVAILABLE')
      throw new DoormanError(
        'STORE_UNAVAILABLE',
        `${error.message} (doorman serve brings it up to date when it starts)`,
        { cause: error },
      );
    throw error;
  }
}

/** What a copy did, per table, with what it left out and why. */
function copyLines(path: string, plan: CopyPlan, result: CopyResult): string[] {
  const lines: string[] = [];
  if (COPIED_TABLES.some((t) => result.replaced[t] > 0))
    lines.push(`replaced what it held: ${countList(result.replaced)}`);
  lines.push(`copied from ${path}:`);
  const { expiredSessions, expiredAdminSessions, settings } = plan.left;
  const notes: Partial<Record<CopiedTable, string>> = {
    ...(expiredSessions > 0 ? { sessions: `${expiredSessions} past their hard expiry left out` } : {}),
    ...(expiredAdminSessions > 0 ? { admin_sessions: `${expiredAdminSessions} expired left out` } : {}),
    ...(settings.length > 0 ? { settings: `${settings.join(', ')} stays on this box` } : {}),
  };
  const width = Math.max(...COPIED_TABLES.map((t) => t.length)) + 2;
  for (const table of COPIED_TABLES) {
    const note = notes[table];
    lines.push(`  ${table.padEnd(width)}${result.copied[table]}${note === undefined ? '' : ` (${note})`}`);
  }
  return lines;
}

const countList = (counts: CopyCounts): string =>
  COPIED_TABLES.filter((t) => counts[t] > 0)
    .map((t) => `${t} ${counts[t]}`)
    .join(', ');

/**
 * The password file is read by the client at each connection, as the service user (like store.passwordFile):
 * read it once now, so a wrong mode or a file that user cannot read is said before anything is done.
 */
function checkPasswordFile(path: string): void {
  try {
    readPasswordFile(path);
  } catch (error) {
    if (error instanceof DoormanError)
      throw new DoormanError(error.code, `store copy: --password-file: ${error.message}`);
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new UsageError(`store copy: --password-file: cannot read ${showValue(path)} as this user: ${code}`);
  }
}

/**
 * A client for one command: one connection, given up on a host after 5 s, ended afterwards. The client's own
 * errors (refused, timed out, authentication failed) become STORE_UNAVAILABLE naming the URL, never a stack.
 */
async function withPostgres<T>(settings: PostgresSettings, work: (sql: Sql) => Promise<T>): Promise<T> {
  const sql = connectPostgres(settings, { applicationName: 'doorman-cli', max: 1, connectTimeoutSeconds: 5 });
  try {
    return await work(sql);
  } catch (error) {
    if (error instanceof DoormanError) throw error;
    throw new DoormanError(
      'STORE_UNAVAILABLE',
      `PostgreSQL ${showUrl(settings.url)}: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  } finally {
    await sql.end({ timeout: 1 });
  }
}
