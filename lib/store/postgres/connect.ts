import postgres from 'postgres';
import { maskUrlPasswords } from '../../config/postgres-url.ts';
import { DoormanError } from '../../errors.ts';
import { readSecretFile } from '../../fs/secret-file.ts';

/** A client of the `postgres` library (a pool; LISTEN on a connection of its own). */
export type Sql = postgres.Sql;
/** A transaction's handle: the same tagged template, bound to one connection. */
export type Tx = postgres.TransactionSql;

export interface PostgresSettings {
  /** libpq's URL form, several hosts allowed; never a password (the config refuses one). */
  url: string;
  /** A file holding the password (its first line), the service user's and 0600; null: PGPASSWORD or none. */
  passwordFile: string | null;
}

export interface ConnectOptions {
  /** Shown in pg_stat_activity: which Doorman process this is (doorman-serve, doorman-authd, doorman-cli). */
  applicationName: string;
  /** Connections in the pool. */
  max?: number;
  /** Seconds to give up connecting to one host (then the next is tried). */
  connectTimeoutSeconds?: number;
  /** statement_timeout of every statement, ms (a replica's full load sets its own, larger, one). */
  statementTimeoutMs?: number;
  /** Server notices and connection trouble, one line each (never a password: the library's messages hold none). */
  log?: (line: string) => void;
}

/**
 * The password in a file, its first line: store.passwordFile (read at every (re)connect, so a rotated password
 * is taken without a restart) and `doorman store copy --password-file`. A secret file (lib/fs/secret-file.ts):
 * the process user's, 0600.
 */
export function readPasswordFile(path: string): string {
  return readSecretFile(path, 'the password file');
}

/**
 * The URL as the client library must read it. libpq's `target_session_attrs=read-write` is what admins write
 * for "the primary, wherever it is now"; the library judges read-write by default_transaction_read_only, which
 * a hot standby reports as off, so it would stay on a standby (porsager/postgres#815). `primary` (not in hot
 * standby) is judged right, and is what read-write means on a replicated cluster.
 */
export function libraryUrl(url: string): string {
  return url.replace(/([?&]target_session_attrs=)read-write(?=&|$)/, '$1primary');
}

/**
 * The URL as logs, errors and `doorman store status` show it: a password, if one got in anyway (before the
 * hosts, or a `password` parameter), is masked.
 */
export function showUrl(url: string): string {
  return maskUrlPasswords(url);
}

/**
 * A client for the store. Times are bigint milliseconds in the schema: they come back as JS numbers (they fit
 * in 2^53). Prepared statements and pipelining are the library's defaults. Connections are opened lazily; a
 * broken one is replaced at the next query, and a LISTEN is re-issued on the new connection by the library.
 */
export function connectPostgres(settings: PostgresSettings, options: ConnectOptions): Sql {
  try {
    return client(settings, options);
  } catch (error) {
    // The library reads the URL here, with new URL(): its TypeError carries the whole URL in `input` (a
    // password too, if one got past the config check), which whatever logs the error would print. Not kept,
    // not even as the cause: the message says what it was, with the URL as showUrl shows it.
    const what =
      (error as NodeJS.ErrnoException | undefined)?.code ?? (error as Error | undefined)?.name ?? 'error';
    throw new DoormanError(
      'CONFIG_INVALID',
      `PostgreSQL ${showUrl(settings.url)}: not a URL the client can read (${what}): postgres://USER@HOST[:PORT][,HOST2[:PORT2]...]/DATABASE`,
    );
  }
}

function client(settings: PostgresSettings, options: ConnectOptions): Sql {
  const { passwordFile } = settings;
  return postgres(libraryUrl(settings.url), {
    max: options.max ?? 4,
    connect_timeout: options.connectTimeoutSeconds ?? 5,
    idle_timeout: 0,
    // Seconds before a connection lost is tried again: the library's default grows to 20 s, which would keep a
    // box stale that long after PostgreSQL is back. At most a second, with some jitter between boxes.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 0.5 + Math.random() * 0.5),
    ...(passwordFile === null ? {} : { password: () => readPasswordFile(passwordFile) }),
    // Bounds the server enforces, whatever the client does: a statement waiting on a lock (another box's
    // transaction) gives up with the web app's deadline instead of committing after it answered 503, and a
    // transaction whose client has gone silent is rolled back rather than holding its locks.
    connection: {
      application_name: options.applicationName,
      statement_timeout: options.statementTimeoutMs ?? 5000,
      idle_in_transaction_session_timeout: 10_000,
    },
    types: {
      bigint: {
        to: 20,
        from: [20],
        serialize: (value: number) => String(value),
        parse: (value: string) => Number(value),
      },
    },
    onnotice: (notice) =>
      options.log?.(`PostgreSQL: ${notice.severity ?? 'NOTICE'}: ${notice.message ?? ''}`),
  });
}
