import { countExpiries } from '../lib/metrics/sessions.ts';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { AuditInput } from '../lib/audit/event.ts';
import { auditSinks } from '../lib/audit/sink.ts';
import { showValue } from '../lib/errors.ts';
import { dbPath, loadConfig, type LoadedConfig } from '../lib/config/load.ts';
import { openDatabase, type OpenOptions } from '../lib/store/database.ts';
import { openStore, type OpenStoreOptions } from '../lib/store/open-store.ts';
import { SignInFailureStore } from '../lib/store/sign-in-failure-store.ts';
import type { Store } from '../lib/store/store.ts';
import { processUser } from '../lib/process-user.ts';
import { becomeServiceUser } from '../lib/system/service-user.ts';

/** Exit codes: 0 done, 1 it failed (see stderr), 2 the command line was wrong. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

export class UsageError extends Error {
  override name = 'UsageError';
}

export interface Command {
  name: string;
  summary: string;
  /** Full --help text. */
  help: string;
  run(argv: string[]): Promise<number>;
}

export const CONFIG_OPTION = {
  config: { type: 'string', short: 'c' },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies ParseArgsConfig['options'];

export const CONFIG_HELP = `  -c, --config FILE   configuration file (default /etc/doorman/doorman.json if it exists,
                      otherwise the embedded defaults); also DOORMAN_CONFIG
  -h, --help          this text`;

/** parseArgs, with its errors turned into usage errors (exit 2). */
export function parse<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/**
 * The action word of a command (`doorman sessions list`) and its arguments, at most `maxArgs` of them:
 * anything else is a usage error naming what was allowed.
 */
export function actionOf<const A extends string>(
  command: string,
  positionals: readonly string[],
  allowed: readonly A[],
  maxArgs = 0,
): { action: A; args: string[] } {
  const [word, ...args] = positionals;
  if (word === undefined || !(allowed as readonly string[]).includes(word)) {
    const choices = `${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}`;
    throw new UsageError(
      `${command}: expected ${choices}, got ${word === undefined ? 'nothing' : showValue(word)}`,
    );
  }
  noExtra(args.slice(maxArgs));
  return { action: word as A, args };
}

/** A usage error for the first argument nobody asked for. */
export function noExtra(extra: readonly string[]): void {
  if (extra.length > 0) throw new UsageError(`unexpected argument ${showValue(extra[0] ?? '')}`);
}

export function configFrom(option: string | undefined): LoadedConfig {
  return loadConfig(option ?? process.env.DOORMAN_CONFIG);
}

export interface Stores {
  /** What every box of a site shares: sessions, API keys, admins, Device Groups, the settings (config.store). */
  store: Store;
  /**
   * Per box, on the local session DB whatever the store: wrong sign-ins per account and address (the splash
   * page's limits, shared with the Basic helper).
   */
  signInFailures: SignInFailureStore;
  /** Writes what is pending, then closes the store and the local DB. */
  close(): Promise<void>;
}

/**
 * Who runs this command, for the audit trail: `cli:<OS user>`, read before the CLI becomes the service user
 * (the user sudo was run by, when it was).
 */
export const CLI_ACTOR = `cli:${process.env['SUDO_USER'] ?? processUser()}`;

/**
 * The store and the box's own DB, opened as the service user (see becomeServiceUser): never leave root-owned
 * DB files. `options` are the local DB's (busy timeouts: the CLI's default, or none for serve) and who opens
 * the store (the CLI unless said).
 */
export async function openStores(
  loaded: LoadedConfig,
  options: OpenOptions & OpenStoreOptions = {},
): Promise<Stores> {
  becomeServiceUser(loaded.config);
  const db = openDatabase(dbPath(loaded.config), options);
  const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const auditSink = auditSinks(loaded.config.audit, { log });
  let store: Store;
  try {
    store = await openStore(loaded.config, db, {
      applicationName: 'doorman-cli',
      ...options,
      // Committed events: the expiries counted (lib/metrics/sessions.ts), all shipped to the sinks if any.
      ship: (records) => {
        countExpiries(records);
        auditSink?.ship(records);
      },
    });
  } catch (error) {
    db.close();
    await auditSink?.close();
    throw error;
  }
  return {
    store,
    signInFailures: new SignInFailureStore(db),
    close: async () => {
      await store.close();
      if (db.open) db.close();
      await auditSink?.close();
    },
  };
}

/**
 * Record an audit event from a command that does not hold the store (seamless enable/disable work on the box's
 * own files as root): the store is opened as the service user for it once the work is done. A failure is said
 * on stderr and does not change the command's outcome.
 */
export async function recordAudit(loaded: LoadedConfig, input: AuditInput): Promise<void> {
  try {
    const stores = await openStores(loaded);
    try {
      await stores.store.audit.record(input);
    } finally {
      await stores.close();
    }
  } catch (error) {
    process.stderr.write(`audit: ${input.kind} not recorded: ${(error as Error).message}\n`);
  }
}

export function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

export const iso = (ms: number | undefined): string => (ms === undefined ? '-' : new Date(ms).toISOString());
