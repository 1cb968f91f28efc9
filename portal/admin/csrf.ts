import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Middleware } from 'koa';
import { ApiError } from '../errors.ts';
import { paramsOf, type PortalState } from '../state.ts';
import type { AdminCookies } from './cookies.ts';

/**
 * Cross-site request forgery: every admin POST carries a `csrf` form field that another site cannot know.
 * SameSite=Strict cookies already keep a cross-site POST from arriving signed in; the token also covers
 * browsers that ignore SameSite and a forged POST from a sibling host of the same site.
 */
export const CSRF_FIELD = 'csrf';

/** Constant-time equality of two strings of any length (both hashed to 32 bytes first). */
export function tokensMatch(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b) && expected !== '';
}

const forged = () =>
  new ApiError(
    'forbidden',
    'this form has expired or did not come from this site; go back, reload the page and try again',
  );

/** After requireAdmin and formBody: the form's token must be the admin session's own. */
export const checkSessionCsrf: Middleware<PortalState> = async function checkSessionCsrf(ctx, next) {
  const admin = ctx.state.admin;
  if (admin === undefined) throw new Error('requireAdmin has not run for this route');
  if (!tokensMatch(paramsOf(ctx).get(CSRF_FIELD) ?? '', admin.session.csrfToken)) throw forged();
  await next();
};

/**
 * The sign-in form, before there is a session to bind a token to: a random nonce in a cookie, and in the form
 * an HMAC of it under a key only this process knows (a "signed double-submit cookie"). A site that can plant
 * a cookie still cannot make the matching field. A restart changes the key: an open sign-in page then needs a
 * reload, which the 403 page says.
 */
export class SignInCsrf {
  readonly #key = randomBytes(32);

  newNonce(): string {
    return randomBytes(32).toString('base64url');
  }

  isNonce(value: string | undefined): value is string {
    return value !== undefined && /^[A-Za-z0-9_-]{43}$/.test(value);
  }

  tokenFor(nonce: string): string {
    return createHmac('sha256', this.#key).update(nonce, 'utf8').digest('base64url');
  }

  /** After formBody: the cookie's nonce and the form's token must belong together. */
  check(cookies: AdminCookies): Middleware<PortalState> {
    return async (ctx, next) => {
      const nonce = cookies.signIn(ctx);
      const presented = paramsOf(ctx).get(CSRF_FIELD) ?? '';
      if (!this.isNonce(nonce) || !tokensMatch(presented, this.tokenFor(nonce))) throw forged();
      await next();
    };
  }
}
