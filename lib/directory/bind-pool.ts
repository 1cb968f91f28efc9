import { createConnection, endpointOf, establish, type Connection } from './connection.ts';
import { DirectoryError, toDirectoryError } from './errors.ts';
import { refusalOfUserBind, type PasswordRefusal } from './password-check.ts';
import type { DirectorySettings } from './settings.ts';
import { timedDirectory } from '../metrics/directory.ts';

/**
 * Connections for binding as users, to check their passwords: a few, each doing one bind at a time (a
 * bind is never sent on a connection with other operations in flight), lent out in turn; callers beyond
 * the pool's size wait for one to come back. A connection stays open between binds (rebinding on it is
 * allowed and saves the TCP and TLS handshakes); one found closed is replaced.
 *
 * A bind is sent once. It is never retried, whatever happens: a retried wrong password counts twice
 * towards AD's lockout threshold.
 */
export interface BindPoolOptions {
  settings: DirectorySettings;
  /** Connections at most (default 8). */
  size?: number;
}

interface Pooled {
  connection: Connection;
  /** It has connected once: from then on, not connected means lost. */
  used: boolean;
}

interface Waiter {
  resolve: (pooled: Pooled) => void;
  reject: (error: Error) => void;
}

export class BindPool {
  readonly #settings: DirectorySettings;
  readonly #size: number;
  readonly #server: string;
  readonly #idle: Pooled[] = [];
  readonly #waiters: Waiter[] = [];
  #open = 0;
  #closed = false;

  constructor(options: BindPoolOptions) {
    this.#settings = options.settings;
    this.#size = Math.max(1, options.size ?? 8);
    this.#server = endpointOf(options.settings).server;
  }

  /**
   * Bind as `dn` with `password`. Undefined when the directory accepted it, the refusal when it refused
   * the credentials; a DirectoryError when it could not be asked. The caller has refused empty passwords.
   */
  check(dn: string, password: string): Promise<PasswordRefusal | undefined> {
    return timedDirectory(
      'bind',
      () => this.#check(dn, password),
      (refusal) => (refusal === undefined ? 'ok' : 'refused'),
    );
  }

  async #check(dn: string, password: string): Promise<PasswordRefusal | undefined> {
    if (password.length === 0) return 'empty-password';
    const pooled = await this.#acquire();
    let healthy = false;
    try {
      const { client } = pooled.connection;
      if (!pooled.used) await establish(pooled.connection, this.#settings);
      pooled.used = true;
      try {
        await client.bind(dn, password);
        healthy = true;
        return undefined;
      } catch (error) {
        const refusal = refusalOfUserBind(error);
        healthy = pooled.connection.isAlive();
        if (refusal !== undefined) return refusal;
        throw toDirectoryError(error, { server: this.#server, phase: 'bind' });
      }
    } finally {
      this.#release(pooled, healthy);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const waiter of this.#waiters.splice(0)) {
      waiter.reject(new DirectoryError('CLOSED', 'the directory connection is closed'));
    }
    await Promise.all(this.#idle.splice(0).map((p) => p.connection.close()));
  }

  #acquire(): Promise<Pooled> {
    if (this.#closed)
      return Promise.reject(new DirectoryError('CLOSED', 'the directory connection is closed'));
    for (let p = this.#idle.pop(); p !== undefined; p = this.#idle.pop()) {
      if (!p.used || p.connection.isAlive()) return Promise.resolve(p);
      this.#open--;
      void p.connection.close();
    }
    if (this.#open < this.#size) {
      this.#open++;
      return Promise.resolve(this.#fresh());
    }
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  #release(pooled: Pooled, healthy: boolean): void {
    let next = pooled;
    if (!healthy || this.#closed) {
      void pooled.connection.close();
      if (this.#closed) {
        this.#open--;
        return;
      }
      next = this.#fresh();
    }
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) waiter.resolve(next);
    else this.#idle.push(next);
  }

  #fresh(): Pooled {
    return { connection: createConnection(this.#settings), used: false };
  }
}
