import { createHash, randomBytes } from 'node:crypto';
import { DoormanError, InvalidInputError, showValue } from '../errors.ts';
import { hashPassword, passwordProblem } from '../security/password-hash.ts';

/**
 * What the web app's administrators and their sign-ins are whichever engine keeps them
 * (lib/store/admin-store.ts on SQLite, lib/store/postgres/admins.ts on PostgreSQL): names, tokens, the rows
 * both tables hold. Passwords are stored as scrypt hashes, session tokens as SHA-256 (a 256-bit random token
 * needs no slow hash).
 */

export interface AdminUserInfo {
  name: string;
  createdAt: number;
  updatedAt: number;
}

/** A signed-in administrator, found by the token in their cookie. */
export interface AdminSession {
  userName: string;
  /** Goes into every form of this session and must come back with every POST. */
  csrfToken: string;
  createdAt: number;
  expiresAt: number;
}

export interface NewAdminSession extends AdminSession {
  /** The cookie value. Only its SHA-256 is stored: this is the one copy there will ever be. */
  token: string;
}

export interface AdminUserRow {
  name: string;
  password_hash: string;
  created_at: number;
  updated_at: number;
}

export interface AdminSessionRow {
  token_hash: Buffer;
  user_name: string;
  csrf_token: string;
  created_at: number;
  expires_at: number;
}

export const ADMIN_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;
/** 32 random bytes, base64url without padding. */
export const ADMIN_TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** Hard lifetime of a sign-in; a working day. There is no idle timeout. */
export const DEFAULT_SESSION_TTL_MS = 8 * 3600 * 1000;

export const tokenHash = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

export const toAdminUser = (r: AdminUserRow): AdminUserInfo => ({
  name: r.name,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

export const toAdminSession = (r: AdminSessionRow): AdminSession => ({
  userName: r.user_name,
  csrfToken: r.csrf_token,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

/** A new sign-in of `userName` at `now`: fresh random token and CSRF token. */
export function newAdminSession(userName: string, now: number, ttlMs: number): NewAdminSession {
  const token = () => randomBytes(32).toString('base64url');
  return { token: token(), userName, csrfToken: token(), createdAt: now, expiresAt: now + ttlMs };
}

/**
 * Made once per process, on first use: the hash an unknown name is checked against, so that "no such admin"
 * costs the same scrypt run as "wrong password" and the timing does not tell them apart.
 */
let dummyHash: Promise<string> | undefined;
export const noSuchAdminHash = (): Promise<string> => (dummyHash ??= hashPassword('doorman-no-such-admin'));

/** Refuse a name outside ADMIN_NAME_PATTERN or an unusable password (INVALID_INPUT naming the field). */
export function checkAdminInput(name: string, password?: string): void {
  if (!ADMIN_NAME_PATTERN.test(name)) {
    throw new InvalidInputError(
      'user',
      `${showValue(name)} is not allowed: 1-64 characters, letters, digits, ". _ @ -", starting with a letter or digit`,
    );
  }
  const problem = password === undefined ? undefined : passwordProblem(password);
  if (problem !== undefined) throw new InvalidInputError('password', problem);
}

export const noSuchAdmin = (name: string): DoormanError =>
  new DoormanError('NOT_FOUND', `user: no admin named ${showValue(name)}`);

export const lastAdmin = (name: string): DoormanError =>
  new DoormanError('CONFLICT', `user: ${showValue(name)} is the only administrator: add another first`);
