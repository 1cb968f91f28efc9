import type { Client } from 'ldapts';
import type { Clock } from '../clock.ts';
import type { Log } from '../log.ts';
import { createConnection, endpointOf, establish, type Connection, type Credentials } from './connection.ts';
import { DirectoryError, toDirectoryError } from './errors.ts';
import type { DirectorySettings } from './settings.ts';
import { timedDirectory } from '../metrics/directory.ts';

/**
 * The connections searches go over, bound as the bind account. ldapts keeps a map of outstanding messages
 * by message ID, so one client carries many searches at once (pipelined): every concurrent request shares
 * these few connections, taken in turn. Nothing else is ever sent on them: no user binds (a bind changes
 * the identity of the connection under every operation in flight, and RFC 4511 §4.2.1 lets a server fail
 * them).
 *
 * A connection that is lost is replaced on the next call, so the directory coming back needs no restart. A
 * search that failed because a connection we had been using was gone (the server closes idle ones: AD after
 * 15 minutes) is sent once more on a fresh one; searches are safe to repeat. When the bind account itself is
 * refused, binding again is held off for a while: retrying at the rate of Squid's requests would lock the
 * account out in AD.
 */
export interface SearchPoolOptions {
  settings: DirectorySettings;
  credentials: Credentials;
  clock: Clock;
  log: Log;
  /** Connections to share (default 2). */
  size?: number;
}

/** How long a refused bind account is not tried again. */
export const BIND_ACCOUNT_HOLD_MS = 30_000;

interface Slot {
  connection: Connection | undefined;
  opening: Promise<Connection> | undefined;
}

export class SearchPool {
  readonly #settings: DirectorySettings;
  readonly #credentials: Credentials;
  readonly #clock: Clock;
  readonly #log: Log;
  readonly #slots: Slot[];
  readonly #server: string;
  #next = 0;
  #closed = false;
  #held: { until: number; error: DirectoryError } | undefined;
  /** Whether the last attempt to connect failed: to log changes of state, not every failure. */
  #down = false;

  constructor(options: SearchPoolOptions) {
    this.#settings = options.settings;
    this.#credentials = options.credentials;
    this.#clock = options.clock;
    this.#log = options.log;
    this.#server = endpointOf(options.settings).server;
    this.#slots = Array.from({ length: Math.max(1, options.size ?? 2) }, () => ({
      connection: undefined,
      opening: undefined,
    }));
  }

  /**
   * Run `operation` on a bound connection. Errors come out as DirectoryErrors (`base` names the search
   * base in the message).
   */
  run<T>(base: string, operation: (client: Client) => Promise<T>): Promise<T> {
    return timedDirectory('search', () => this.#run(base, operation));
  }

  async #run<T>(base: string, operation: (client: Client) => Promise<T>): Promise<T> {
    const slot = this.#slots[this.#next++ % this.#slots.length] as Slot;
    for (let attempt = 1; ; attempt++) {
      const { connection, reused } = await this.#ready(slot);
      try {
        return await operation(connection.client);
      } catch (error) {
        const failure = toDirectoryError(error, { server: this.#server, phase: 'search', base });
        if (!connection.isAlive() && slot.connection === connection) {
          slot.connection = undefined;
          void connection.close();
        }
        if (reused && attempt === 1 && failure.code === 'UNREACHABLE') continue;
        throw failure;
      }
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const connections = this.#slots.flatMap((s) => (s.connection === undefined ? [] : [s.connection]));
    for (const slot of this.#slots) slot.connection = undefined;
    await Promise.all(connections.map((c) => c.close()));
  }

  async #ready(slot: Slot): Promise<{ connection: Connection; reused: boolean }> {
    if (this.#closed) throw new DirectoryError('CLOSED', 'the directory connection is closed');
    const current = slot.connection;
    if (current !== undefined) {
      if (current.isAlive() && current.client.isBound) return { connection: current, reused: true };
      slot.connection = undefined;
      void current.close();
    }
    if (this.#held !== undefined) {
      if (this.#clock.now() < this.#held.until) throw this.#held.error;
      this.#held = undefined;
    }
    slot.opening ??= this.#open(slot).finally(() => {
      slot.opening = undefined;
    });
    return { connection: await slot.opening, reused: false };
  }

  async #open(slot: Slot): Promise<Connection> {
    const connection = createConnection(this.#settings);
    try {
      await establish(connection, this.#settings, this.#credentials);
    } catch (error) {
      const failure = error instanceof DirectoryError ? error : toDirectoryError(error, this.#context());
      if (failure.code === 'INVALID_CREDENTIALS') {
        this.#held = { until: this.#clock.now() + BIND_ACCOUNT_HOLD_MS, error: failure };
      }
      if (!this.#down) this.#log(`directory: ${failure.message}`);
      this.#down = true;
      throw failure;
    }
    if (this.#closed) {
      void connection.close();
      throw new DirectoryError('CLOSED', 'the directory connection is closed');
    }
    if (this.#down) this.#log(`directory: connected to ${this.#server} again`);
    this.#down = false;
    slot.connection = connection;
    return connection;
  }

  #context() {
    return { server: this.#server, phase: 'bind' as const, bindDn: this.#credentials.dn };
  }
}
