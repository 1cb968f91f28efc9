import postgres from 'postgres';
import type { Clock } from '../../clock.ts';
import { DoormanError } from '../../errors.ts';
import { hashPassword, needsRehash, verifyPassword } from '../../security/password-hash.ts';
import {
  ADMIN_TOKEN_PATTERN,
  checkAdminInput,
  DEFAULT_SESSION_TTL_MS,
  newAdminSession,
  lastAdmin,
  noSuchAdmin,
  noSuchAdminHash,
  toAdminSession,
  toAdminUser,
  tokenHash,
  type AdminSession,
  type AdminSessionRow,
  type AdminUserInfo,
  type AdminUserRow,
  type NewAdminSession,
} from '../admin-rules.ts';
import type { AdminRepository } from '../store.ts';
import type { Sql, Tx } from './connect.ts';
import type { Replica } from './replica.ts';
import { writeTable } from './write.ts';

/**
 * The web app's administrators and their sign-ins on PostgreSQL (the AdminStore of SQLite, shared by every
 * box): admin_users and admin_sessions are one replicated table, 'admins', read whole at each change (a site
 * has a few admins and a few dozen sign-ins), so has(), list() and findSession() never wait on the network and
 * a sign-out or a password change on one box ends the sign-in on every box. Every write takes the 'admins'
 * change number first, which holds its counter row until commit: the writes of all boxes to these tables run
 * one after the other, and what a write decides (the admin exists, is not the last one, still has the password
 * that was checked) it decides on the rows as they are then, never on this process's copy.
 */
export class PgAdmins implements AdminRepository {
  readonly #sql: Sql;
  readonly #replica: Replica;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  #users = new Map<string, AdminUserRow>();
  /** By the token's SHA-256, hex. */
  #sessions = new Map<string, AdminSessionRow>();

  constructor(sql: Sql, replica: Replica, clock: Clock, options: { sessionTtlMs?: number } = {}) {
    this.#sql = sql;
    this.#replica = replica;
    this.#clock = clock;
    this.#ttlMs = options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS;
    replica.table('admins', {
      load: async (tx) => {
        const users = await tx<AdminUserRow[]>`
          SELECT name, password_hash, created_at, updated_at FROM admin_users`;
        const sessions = await tx<AdminSessionRow[]>`
          SELECT token_hash, user_name, csrf_token, created_at, expires_at FROM admin_sessions`;
        return () => {
          this.#users = new Map(users.map((u) => [u.name, u]));
          this.#sessions = new Map(sessions.map((s) => [s.token_hash.toString('hex'), s]));
        };
      },
    });
  }

  /**
   * Create the admin or change their password. A changed password ends every sign-in of that admin, on every
   * box: whoever knew the old one is out. Returns whether the admin is new.
   */
  async setPassword(name: string, password: string): Promise<{ created: boolean }> {
    checkAdminInput(name, password);
    const hash = await hashPassword(password);
    return this.#write(async (tx, change, now) => {
      const [exists] = await tx`SELECT 1 FROM admin_users WHERE name = ${name} FOR UPDATE`;
      if (exists === undefined) {
        await tx`INSERT INTO admin_users (name, password_hash, created_at, updated_at, change)
          VALUES (${name}, ${hash}, ${now}, ${now}, ${change})`;
      } else {
        await tx`UPDATE admin_users SET password_hash = ${hash}, updated_at = ${now}, change = ${change}
          WHERE name = ${name}`;
        await tx`DELETE FROM admin_sessions WHERE user_name = ${name}`;
      }
      return { created: exists === undefined };
    });
  }

  /**
   * Is this the admin's password? An unknown name is checked against a dummy hash, so every refusal takes one
   * scrypt run. A hash made with weaker parameters than today's is replaced on success (unless PostgreSQL is
   * away, then at a later check).
   */
  async verify(name: string, password: string): Promise<boolean> {
    const row = this.#users.get(name);
    const ok = await verifyPassword(password, row?.password_hash ?? (await noSuchAdminHash()));
    if (row === undefined || !ok) return false;
    await this.#rehash(name, password, row.password_hash);
    return true;
  }

  has(name: string): boolean {
    return this.#users.has(name);
  }

  list(): AdminUserInfo[] {
    return [...this.#users.values()]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map(toAdminUser);
  }

  /**
   * Remove an admin and their sign-ins (NOT_FOUND if there is none), as SQLite does. keepOne (store.ts) is
   * decided here under the admins' counter row, which every admin write holds first, so two boxes removing
   * the last two admins at once cannot both succeed.
   */
  async remove(name: string, options: { keepOne?: boolean } = {}): Promise<void> {
    await this.#write(async (tx) => {
      const [found] = await tx<{ name: string }[]>`
        SELECT name FROM admin_users WHERE name = ${name} FOR UPDATE`;
      if (found === undefined) throw noSuchAdmin(name);
      if (options.keepOne === true) {
        const [counted] = await tx<{ n: number }[]>`SELECT count(*)::int AS n FROM admin_users`;
        if (counted?.n === 1) throw lastAdmin(name);
      }
      await tx`DELETE FROM admin_sessions WHERE user_name = ${name}`;
      await tx`DELETE FROM admin_users WHERE name = ${name}`;
    });
  }

  /**
   * Check the password and, if it is right, sign the admin in: the session is made only if the stored hash is
   * still the one the password was checked against (read again inside the write), so a password change that
   * lands on any box during the slow scrypt check cannot be outlived by a session of the old password.
   */
  async signIn(name: string, password: string): Promise<NewAdminSession | undefined> {
    const row = this.#users.get(name);
    const ok = await verifyPassword(password, row?.password_hash ?? (await noSuchAdminHash()));
    if (row === undefined || !ok) return undefined;
    const checked = await this.#rehash(name, password, row.password_hash);
    return this.#write(async (tx, change, now) => {
      const [current] = await tx<{ password_hash: string }[]>`
        SELECT password_hash FROM admin_users WHERE name = ${name} FOR UPDATE`;
      return current?.password_hash === checked ? this.#startSession(tx, name, change, now) : undefined;
    });
  }

  /** Sign `userName` in (NOT_FOUND if there is no such admin). Also drops expired sign-ins. */
  async createSession(userName: string): Promise<NewAdminSession> {
    try {
      return await this.#write((tx, change, now) => this.#startSession(tx, userName, change, now));
    } catch (error) {
      if (error instanceof postgres.PostgresError && error.code === '23503') throw noSuchAdmin(userName);
      throw error;
    }
  }

  /** The live session for a cookie value; undefined for an unknown, ended, expired or malformed token. */
  findSession(token: string): AdminSession | undefined {
    if (!ADMIN_TOKEN_PATTERN.test(token)) return undefined;
    const row = this.#sessions.get(tokenHash(token).toString('hex'));
    return row === undefined || row.expires_at <= this.#clock.now() ? undefined : toAdminSession(row);
  }

  /** Sign out, on every box. True if there was such a session. */
  async endSession(token: string): Promise<boolean> {
    if (!ADMIN_TOKEN_PATTERN.test(token)) return false;
    return this.#write(async (tx) => {
      const gone = await tx`DELETE FROM admin_sessions WHERE token_hash = ${tokenHash(token)}`;
      return gone.count > 0;
    });
  }

  /** End every session of one admin; how many. */
  endSessionsOf(userName: string): Promise<number> {
    return this.#write(
      async (tx) => (await tx`DELETE FROM admin_sessions WHERE user_name = ${userName}`).count,
    );
  }

  /** Inside a write: drop expired sign-ins, insert a new one. */
  async #startSession(tx: Tx, userName: string, change: number, now: number): Promise<NewAdminSession> {
    const session = newAdminSession(userName, now, this.#ttlMs);
    await tx`DELETE FROM admin_sessions WHERE expires_at <= ${now}`;
    await tx`INSERT INTO admin_sessions (token_hash, user_name, csrf_token, created_at, expires_at, change)
      VALUES (${tokenHash(session.token)}, ${userName}, ${session.csrfToken}, ${now}, ${session.expiresAt},
        ${change})`;
    return session;
  }

  /**
   * A better hash for a right password, written only over the hash that was checked; the hash in force after
   * it (the new one, or the checked one when the write is skipped: PostgreSQL away, or another write was first).
   */
  async #rehash(name: string, password: string, checked: string): Promise<string> {
    if (!needsRehash(checked)) return checked;
    const hash = await hashPassword(password);
    try {
      const changed = await this.#write(async (tx, change, now) => {
        const updated = await tx`UPDATE admin_users SET password_hash = ${hash}, updated_at = ${now},
          change = ${change} WHERE name = ${name} AND password_hash = ${checked}`;
        return updated.count === 1;
      });
      return changed ? hash : checked;
    } catch (error) {
      if (error instanceof DoormanError && error.code === 'STORE_UNAVAILABLE') return checked;
      throw error;
    }
  }

  /** One write of the 'admins' table, answered once this process's copy holds it. */
  #write<T>(work: (tx: Tx, change: number, now: number) => Promise<T>): Promise<T> {
    return writeTable(this.#sql, this.#replica, 'admins', (tx, change) =>
      work(tx, change, this.#clock.now()),
    );
  }
}
