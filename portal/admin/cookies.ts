import type { ParameterizedContext } from 'koa';
import type { PortalState } from '../state.ts';

/**
 * The admin screens' cookies, read and written by hand rather than through Koa's ctx.cookies: that refuses to
 * set a Secure cookie unless Koa itself sees TLS, which it does not behind a TLS-terminating proxy; here
 * Secure follows baseUrl.
 */
export interface CookieOptions {
  /** Path attribute: the admin screens' path, so the cookie never goes to the login API or elsewhere. */
  path: string;
  secure: boolean;
  /** Lifetime; 0 deletes the cookie. */
  maxAgeSeconds: number;
  /** Default Strict; the splash page's CSRF cookie is Lax (it must come along on a redirect from elsewhere). */
  sameSite?: 'Strict' | 'Lax';
}

/** cookie-name and cookie-octet of RFC 6265 §4.1.1 (our values are base64url), and a path with no ';'. */
const NAME = /^[A-Za-z0-9_-]+$/;
const VALUE = /^[\x21\x23-\x2B\x2D-\x3A\x3C-\x5B\x5D-\x7E]*$/;
const PATH = /^\/[\x21-\x3A\x3C-\x7E]*$/;

/** A Set-Cookie value: always HttpOnly (no script reads it) and SameSite=Strict (no other site sends it) or Lax. */
export function serializeCookie(name: string, value: string, options: CookieOptions): string {
  if (!NAME.test(name) || !VALUE.test(value)) throw new Error(`cookie ${name}: name or value not allowed`);
  if (!PATH.test(options.path)) {
    throw new Error(`cookie ${name}: path ${JSON.stringify(options.path)} not allowed`);
  }
  const parts = [
    `${name}=${value}`,
    `Path=${options.path}`,
    `Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`,
    'HttpOnly',
    `SameSite=${options.sameSite ?? 'Strict'}`,
  ];
  if (options.secure) parts.push('Secure');
  return parts.join('; ');
}

/**
 * The value of cookie `name` in a Cookie header, or undefined. If a name is sent twice (a cookie planted for a
 * wider path, say), the first is taken: browsers send the most specific path first, and a planted value only
 * fails the check it is used for.
 */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const pair of header.split(';')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    if (pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim();
  }
  return undefined;
}

type Ctx = ParameterizedContext<PortalState>;

export const SESSION_COOKIE = 'doorman_admin';
export const SIGN_IN_COOKIE = 'doorman_admin_sign_in';
/** How long an open sign-in page stays usable. */
const SIGN_IN_SECONDS = 3600;

/** The two admin cookies: the session token, and the sign-in form's CSRF nonce. Both scoped to {base}admin/. */
export class AdminCookies {
  readonly #path: string;
  readonly #secure: boolean;

  constructor(path: string, secure: boolean) {
    // Checked now rather than on the first sign-in: a base path a cookie cannot carry is a start-up error.
    serializeCookie(SESSION_COOKIE, '', { path, secure, maxAgeSeconds: 0 });
    this.#path = path;
    this.#secure = secure;
  }

  session(ctx: Ctx): string | undefined {
    return readCookie(ctx.get('Cookie') || undefined, SESSION_COOKIE);
  }

  signIn(ctx: Ctx): string | undefined {
    return readCookie(ctx.get('Cookie') || undefined, SIGN_IN_COOKIE);
  }

  setSession(ctx: Ctx, token: string, maxAgeSeconds: number): void {
    this.#set(ctx, SESSION_COOKIE, token, maxAgeSeconds);
  }

  clearSession(ctx: Ctx): void {
    this.#set(ctx, SESSION_COOKIE, '', 0);
  }

  setSignIn(ctx: Ctx, nonce: string): void {
    this.#set(ctx, SIGN_IN_COOKIE, nonce, SIGN_IN_SECONDS);
  }

  clearSignIn(ctx: Ctx): void {
    this.#set(ctx, SIGN_IN_COOKIE, '', 0);
  }

  #set(ctx: Ctx, name: string, value: string, maxAgeSeconds: number): void {
    ctx.append(
      'Set-Cookie',
      serializeCookie(name, value, { path: this.#path, secure: this.#secure, maxAgeSeconds }),
    );
  }
}
