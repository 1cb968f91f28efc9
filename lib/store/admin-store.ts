import type { Statement } from 'better-sqlite3';
import type { Clock } from '../clock.ts';
import { hashPassword, needsRehash, verifyPassword } from '../security/password-hash.ts';
import {
  ADMIN_TOKEN_PATTERN as TOKEN_PATTERN,
  checkAdminInput,
  DEFAULT_SESSION_TTL_MS,
  newAdminSession,
  lastAdmin,
  noSuchAdmin,
  noSuchAdminHash as dummy,
  toAdminSession,
  toAdminUser as toUser,
  tokenHash as sha256,
  type AdminSession,
  type AdminSessionRow as SessionRow,
  type AdminUserInfo,
  type AdminUserRow as UserRow,
  type NewAdminSession,
} from './admin-rules.ts';
import { realSchedule, retryWhileBusy, unlessBusy, type Schedule } from './busy.ts';
import type { Db } from './database.ts';

export {
  ADMIN_NAME_PATTERN,
  DEFAULT_SESSION_TTL_MS,
  type AdminSession,
  type AdminUserInfo,
  type NewAdminSession,
} from './admin-rules.ts';

/**
 * Administrators of the web app and their sign-ins. Passwords are stored as scrypt hashes, session tokens as
 * SHA-256 (a 256-bit random token needs no slow hash). Statements are prepared once.
 */
export class AdminStore {
  readonly #db: Db;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #schedule: Schedule;
  readonly #userByName: Statement;
  readonly #listUsers: Statement;
  readonly #insertUser: Statement;
  readonly #updateHash: Statement;
  readonly #updateHashIfUnchanged: Statement;
  readonly #deleteUser: Statement;
  readonly #countUsers: Statement;
  readonly #insertSession: Statement;
  readonly #sessionByHash: Statement;
  readonly #deleteSession: Statement;
  readonly #deleteSessionsOf: Statement;
  readonly #deleteExpired: Statement;

  /** `schedule`: the timers a write waits on while another process holds the lock (tests pass their own). */
  constructor(db: Db, clock: Clock, options: { sessionTtlMs?: number; schedule?: Schedule } = {}) {
    this.#db = db;
    this.#clock = clock;
    this.#ttlMs = options.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS;
    this.#schedule = options.schedule ?? realSchedule;
    this.#userByName = db.prepare('SELECT * FROM admin_users WHERE name = ?');
    this.#listUsers = db.prepare('SELECT * FROM admin_users ORDER BY name');
    this.#insertUser = db.prepare(
      'INSERT INTO admin_users (name, password_hash, created_at, updated_at) VALUES (@name, @hash, @now, @now)',
    );
    this.#updateHashIfUnchanged = db.prepare(
      'UPDATE admin_users SET password_hash = @hash, updated_at = @now WHERE name = @name AND password_hash = @old',
    );
    this.#updateHash = db.prepare(
      'UPDATE admin_users SET password_hash = @hash, updated_at = @now WHERE name = @name',
    );
    this.#deleteUser = db.prepare('DELETE FROM admin_users WHERE name = ?');
    this.#countUsers = db.prepare('SELECT count(*) AS n FROM admin_users').pluck();
    this.#insertSession = db.prepare(
      `INSERT INTO admin_sessions (token_hash, user_name, csrf_token, created_at, expires_at)
       VALUES (@tokenHash, @userName, @csrfToken, @now, @expiresAt)`,
    );
    this.#sessionByHash = db.prepare('SELECT * FROM admin_sessions WHERE token_hash = ? AND expires_at > ?');
    this.#deleteSession = db.prepare('DELETE FROM admin_sessions WHERE token_hash = ?');
    this.#deleteSessionsOf = db.prepare('DELETE FROM admin_sessions WHERE user_name = ?');
    this.#deleteExpired = db.prepare('DELETE FROM admin_sessions WHERE expires_at <= ?');
  }

  /**
   * Create the admin or change their password. A changed password ends every sign-in of that admin: whoever
   * knew the old one is out. Returns whether the admin is new.
   */
  async setPassword(name: string, password: string): Promise<{ created: boolean }> {
    checkAdminInput(name, password);
    const hash = await hashPassword(password);
    const now = this.#clock.now();
    // One transaction from the existence check to the session purge, so a concurrent sign-in with the old
    // password cannot slip a session in between.
    return this.#db.transaction(() => {
      const exists = this.#userByName.get(name) !== undefined;
      if (exists) {
        this.#updateHash.run({ name, hash, now });
        this.#deleteSessionsOf.run(name);
      } else {
        this.#insertUser.run({ name, hash, now });
      }
      return { created: !exists };
    })();
  }

  /**
   * Is this the admin's password? An unknown name is checked against a dummy hash, so every refusal takes one
   * scrypt run. A hash made with weaker parameters than today's is replaced on success.
   */
  async verify(name: string, password: string): Promise<boolean> {
    const row = this.#userByName.get(name) as UserRow | undefined;
    const ok = await verifyPassword(password, row?.password_hash ?? (await dummy()));
    if (row === undefined || !ok) return false;
    if (needsRehash(row.password_hash)) {
      const hash = await hashPassword(password);
      // A better hash can wait for the next check if the DB is locked now.
      unlessBusy(() => this.#updateHash.run({ name, hash, now: this.#clock.now() }));
    }
    return true;
  }

  /** Whether an admin of this name exists: one indexed read. */
  has(name: string): boolean {
    return this.#userByName.get(name) !== undefined;
  }

  list(): AdminUserInfo[] {
    return (this.#listUsers.all() as UserRow[]).map(toUser);
  }

  /** Remove an admin; their sessions go with them (ON DELETE CASCADE, and explicitly). See store.ts for keepOne. */
  remove(name: string, options: { keepOne?: boolean } = {}): void {
    this.#db.transaction(() => {
      if (
        options.keepOne === true &&
        this.#userByName.get(name) !== undefined &&
        (this.#countUsers.get() as number) === 1
      ) {
        throw lastAdmin(name);
      }
      this.#deleteSessionsOf.run(name);
      if (this.#deleteUser.run(name).changes === 0) {
        throw noSuchAdmin(name);
      }
    })();
  }

  /**
   * Check the password and, if it is right, sign the admin in: a session is made only if the stored hash is
   * still the one the password was checked against, so a `doorman admin passwd` that lands during the slow
   * scrypt check (and ends every session of that admin) cannot be outlived by a session of the old password.
   * While another process holds the DB's write lock the session is tried again on timers (busy.ts), never in
   * a blocking wait, and a StoreBusyError ends it after BUSY_DEADLINE_MS; the rehash is skipped then.
   */
  async signIn(name: string, password: string): Promise<NewAdminSession | undefined> {
    const row = this.#userByName.get(name) as UserRow | undefined;
    const ok = await verifyPassword(password, row?.password_hash ?? (await dummy()));
    if (row === undefined || !ok) return undefined;
    let checked = row.password_hash;
    if (needsRehash(checked)) {
      const hash = await hashPassword(password);
      // A better hash can wait for the next sign-in if the DB is locked now.
      unlessBusy(() => {
        const changed = this.#updateHashIfUnchanged.run({ name, old: checked, hash, now: this.#clock.now() });
        if (changed.changes === 1) checked = hash;
      });
    }
    // IMMEDIATE: the write lock is taken before the check, so a busy DB is met before anything ran.
    const start = this.#db.transaction(() => {
      const current = this.#userByName.get(name) as UserRow | undefined;
      return current?.password_hash === checked ? this.createSession(name) : undefined;
    });
    return retryWhileBusy(() => start.immediate(), { clock: this.#clock, schedule: this.#schedule });
  }

  /** Sign `userName` in. Also drops expired sessions, so the table does not grow without bound. */
  createSession(userName: string): NewAdminSession {
    const now = this.#clock.now();
    const session = newAdminSession(userName, now, this.#ttlMs);
    this.#db.transaction(() => {
      this.#deleteExpired.run(now);
      this.#insertSession.run({
        tokenHash: sha256(session.token),
        userName,
        csrfToken: session.csrfToken,
        now,
        expiresAt: session.expiresAt,
      });
    })();
    return session;
  }

  /** The live session for a cookie value; undefined for an unknown, ended, expired or malformed token. */
  findSession(token: string): AdminSession | undefined {
    if (!TOKEN_PATTERN.test(token)) return undefined;
    const row = this.#sessionByHash.get(sha256(token), this.#clock.now()) as SessionRow | undefined;
    return row === undefined ? undefined : toAdminSession(row);
  }

  /** Sign out. True if there was such a session. */
  endSession(token: string): boolean {
    if (!TOKEN_PATTERN.test(token)) return false;
    return this.#deleteSession.run(sha256(token)).changes > 0;
  }

  /** End every session of one admin; returns how many. */
  endSessionsOf(userName: string): number {
    return this.#deleteSessionsOf.run(userName).changes;
  }
}
