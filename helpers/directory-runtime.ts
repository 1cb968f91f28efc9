import type { Clock } from '../lib/clock.ts';
import { Directory } from '../lib/directory/directory.ts';
import { DirectoryError } from '../lib/directory/errors.ts';
import { RetiredDirectories } from '../lib/directory/retired.ts';
import { bh, type HelperReply } from '../lib/helper-protocol/message.ts';
import type { Log } from '../lib/log.ts';
import type { DirectorySettingsRepository } from '../lib/store/store.ts';

/**
 * The directory a helper answers from: the settings applied last (Save & apply), picked up without a restart.
 * refresh() runs once per batch of requests and costs one indexed read; only when the settings version moved
 * is a new Directory built (and the old one closed once its requests are done).
 */
export class DirectoryRuntime {
  readonly #store: Pick<DirectorySettingsRepository, 'load' | 'version'>;
  /** What else ends with it (the SQLite handle it reads through). */
  readonly #closed: () => void;
  readonly #clock: Clock;
  readonly #log: Log;
  #version = -1;
  #directory: Directory | undefined;
  readonly #retired = new RetiredDirectories();

  constructor(
    store: Pick<DirectorySettingsRepository, 'load' | 'version'>,
    options: { clock: Clock; log: Log; closed?: () => void },
  ) {
    this.#store = store;
    this.#closed = options.closed ?? (() => undefined);
    this.#clock = options.clock;
    this.#log = options.log;
  }

  refresh(): void {
    const version = this.#store.version();
    if (version === this.#version) return;
    const loaded = this.#store.load();
    const previous = this.#directory;
    this.#directory =
      loaded && new Directory(loaded.settings, loaded.password, { clock: this.#clock, log: this.#log });
    this.#version = version;
    // Requests already sent to the previous directory finish first: close it once they could have.
    if (previous) this.#retired.retire(previous);
    this.#log(
      loaded
        ? `directory settings ${version} in force: ${loaded.settings.kind} ${loaded.settings.host}`
        : 'no directory applied',
    );
  }

  /** The directory in force, or undefined when none was ever applied. */
  get current(): Directory | undefined {
    return this.#directory;
  }

  /** The directory in force and any replaced one still in its grace: their connections end with the process. */
  async close(): Promise<void> {
    await Promise.all([this.#directory?.close(), this.#retired.close()]);
    this.#closed();
  }
}

/**
 * Ask the directory, and turn "cannot ask" into BH: no directory applied, or the directory unreachable,
 * timing out, refusing the bind account. Squid then does not hold it against the user.
 */
export async function askDirectory(
  directory: Directory | undefined,
  ask: (directory: Directory) => Promise<HelperReply>,
): Promise<HelperReply> {
  if (directory === undefined) return bh('no directory applied: doorman directory set');
  try {
    return await ask(directory);
  } catch (error) {
    if (error instanceof DirectoryError) return bh(`directory: ${error.message}`);
    throw error;
  }
}
