/** Timers, injectable so the grace before a replaced directory is closed is tested without waiting. */
export interface RetireTimers {
  set(task: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const systemRetireTimers: RetireTimers = {
  // Unref'd: a grace period alone keeps no process alive (the connections themselves are closed by close()).
  set: (task, ms) => setTimeout(task, ms).unref(),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** What is retired: a Directory (lib/directory/directory.ts), as far as retiring it goes. */
export interface Retirable {
  readonly settings: { readonly connectTimeoutMs: number; readonly timeoutMs: number };
  close(): Promise<void>;
}

/**
 * Directories replaced by a newer Save & apply. Checks already sent to one finish first: it is closed once
 * they could have (its connect timeout plus its operation timeout). close() closes every one still waiting
 * at once, so a process that stops does not keep their connections, or wait for the grace, to exit.
 */
export class RetiredDirectories {
  readonly #timers: RetireTimers;
  readonly #waiting = new Map<Retirable, unknown>();
  #closed = false;

  constructor(timers: RetireTimers = systemRetireTimers) {
    this.#timers = timers;
  }

  retire(directory: Retirable): void {
    if (this.#closed) {
      void directory.close().catch(() => {});
      return;
    }
    const grace = directory.settings.connectTimeoutMs + directory.settings.timeoutMs;
    const handle = this.#timers.set(() => {
      this.#waiting.delete(directory);
      void directory.close().catch(() => {});
    }, grace);
    this.#waiting.set(directory, handle);
  }

  /** How many are waiting for their grace to end. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /** Close every one still waiting, at once; one retired later is closed at once too. */
  async close(): Promise<void> {
    this.#closed = true;
    const directories = [...this.#waiting];
    this.#waiting.clear();
    for (const [, handle] of directories) this.#timers.clear(handle);
    await Promise.all(directories.map(([directory]) => directory.close().catch(() => {})));
  }
}
