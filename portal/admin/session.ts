import type { Middleware, ParameterizedContext } from 'koa';
import type { AdminRepository } from '../../lib/store/store.ts';
import type { PortalState } from '../state.ts';
import type { AdminCookies } from './cookies.ts';

/**
 * Who is signed in: the session cookie's token looked up in the store (ended and expired sessions are not
 * found). Sets ctx.state.admin, and the name for the request log; a cookie that finds nothing is deleted.
 */
export function loadAdminSession(
  store: Pick<AdminRepository, 'findSession'>,
  cookies: AdminCookies,
): Middleware<PortalState> {
  return async function loadSession(ctx, next) {
    const token = cookies.session(ctx);
    if (token !== undefined && token !== '') {
      const session = store.findSession(token);
      if (session === undefined) {
        cookies.clearSession(ctx);
      } else {
        ctx.state.admin = { session, token };
        ctx.state.username = session.userName;
      }
    }
    await next();
  };
}

/** Pages and forms for signed-in admins only: anyone else is sent to the sign-in page (303: GET it). */
export function requireAdmin(signInPath: string): Middleware<PortalState> {
  return async function checkSignedIn(ctx, next) {
    if (ctx.state.admin === undefined) return seeOther(ctx, signInPath);
    await next();
  };
}

/** The signed-in admin, on a route behind requireAdmin (a programming error anywhere else). */
export function adminOf(ctx: ParameterizedContext<PortalState>): NonNullable<PortalState['admin']> {
  if (ctx.state.admin === undefined) throw new Error('requireAdmin has not run for this route');
  return ctx.state.admin;
}

/** 303 See Other: after a POST the browser GETs the new location, and reloading does not repost the form. */
export function seeOther(ctx: ParameterizedContext<PortalState>, location: string): void {
  ctx.status = 303;
  ctx.redirect(location);
}
