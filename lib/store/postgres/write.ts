import postgres from 'postgres';
import { DoormanError } from '../../errors.ts';
import { takeChange } from './changes.ts';
import type { Sql, Tx } from './connect.ts';
import type { Replica } from './replica.ts';
import type { ReplicatedTable } from './schema.ts';

/**
 * The order in which one transaction may take change numbers of several tables (each takes its counter row's
 * lock until commit): always the same order, so two writers never wait on each other in a circle. A Device
 * Group change takes device_groups then sessions; a portal save settings then sessions.
 */
export const TAKE_ORDER: readonly ReplicatedTable[] = [
  'api_keys',
  'admins',
  'settings',
  'device_groups',
  'sessions',
];

/** Takes `tab`'s next change number inside the write (see takeChange), in TAKE_ORDER. */
export type TakeChange = (tab: ReplicatedTable) => Promise<number>;

/** SQLSTATEs that say the server is away or cannot take writes now, not that the write is wrong. */
const UNAVAILABLE_STATES = new Set([
  '53300', // too_many_connections
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, shutting down, in recovery)
  '25006', // read_only_sql_transaction: a standby, after a failover, before target_session_attrs finds the primary
  '57014', // query_canceled: statement_timeout (connect.ts), a statement that waited too long for a lock
  '55P03', // lock_not_available: lock_timeout
]);

/** The library's own connection codes, and the socket's. */
const UNAVAILABLE_CODES = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/** Whether `error` means PostgreSQL cannot be reached (or cannot write) now: worth trying again later. */
export function isUnavailable(error: unknown): boolean {
  if (error instanceof postgres.PostgresError)
    return error.code.startsWith('08') || UNAVAILABLE_STATES.has(error.code);
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && UNAVAILABLE_CODES.has(code);
}

/** A write of the admin screens and the CLI not confirmed by then is answered STORE_UNAVAILABLE, ms. */
export const WRITE_DEADLINE_MS = 5000;

/**
 * Run `work` in one transaction; PostgreSQL being away is STORE_UNAVAILABLE (the web app's 503), and so is
 * one that does not answer within WRITE_DEADLINE_MS (a server gone silent: the server's own statement_timeout,
 * connect.ts, cannot act then).
 */
export async function transaction<T>(sql: Sql, work: (tx: Tx) => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const running = sql.begin(work) as Promise<T>;
    running.catch(() => undefined);
    return await Promise.race([
      running,
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new DoormanError(
                'STORE_UNAVAILABLE',
                `PostgreSQL store: no answer within ${WRITE_DEADLINE_MS} ms`,
              ),
            ),
          WRITE_DEADLINE_MS,
        );
      }),
    ]);
  } catch (error) {
    if (error instanceof DoormanError) throw error;
    if (!isUnavailable(error)) throw error;
    throw new DoormanError('STORE_UNAVAILABLE', `PostgreSQL store: ${(error as Error).message}`, {
      cause: error,
    });
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A write of replicated tables: one transaction in which `work` takes the change number of each table it
 * writes (through `take`, in TAKE_ORDER) and stamps every row it writes with it. Resolves once committed and
 * once this process's replica holds every table written up to its number (read-your-writes); a write that
 * throws leaves nothing, its numbers included.
 */
export async function writeChanges<T>(
  sql: Sql,
  replica: Replica,
  work: (tx: Tx, take: TakeChange) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const taken = new Map<ReplicatedTable, number>();
    try {
      const result = await transaction(sql, (tx) =>
        work(tx, async (tab) => {
          const last = [...taken.keys()].at(-1);
          if (last !== undefined && TAKE_ORDER.indexOf(tab) <= TAKE_ORDER.indexOf(last))
            throw new Error(`change numbers taken out of order: ${tab} after ${last}`);
          const change = await takeChange(tx, tab);
          taken.set(tab, change);
          return change;
        }),
      );
      // A table this process does not hold (no repository registered it) has nothing to wait for.
      const held = [...taken].filter(([tab]) => replica.applied(tab) >= 0);
      await Promise.all(held.map(([tab, change]) => replica.caughtUp(tab, change)));
      return result;
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || !isRetryable(error)) throw error;
    }
  }
}

/** Tries of a write that PostgreSQL aborted for another transaction's sake (nothing of it was kept). */
const MAX_ATTEMPTS = 3;

/** deadlock_detected, serialization_failure: the transaction was rolled back and can simply run again. */
const isRetryable = (error: unknown): boolean =>
  error instanceof postgres.PostgresError && (error.code === '40P01' || error.code === '40001');

/** A write of one table: `work` gets the change number to stamp its rows with. */
export function writeTable<T>(
  sql: Sql,
  replica: Replica,
  tab: ReplicatedTable,
  work: (tx: Tx, change: number) => Promise<T>,
): Promise<T> {
  return writeChanges(sql, replica, async (tx, take) => work(tx, await take(tab)));
}
