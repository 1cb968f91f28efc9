import type { Middleware, ParameterizedContext } from 'koa';
import { showValue } from '../../lib/errors.ts';
import { formBody } from '../middleware/form-body.ts';
import type { PortalState } from '../state.ts';
import { checkSessionCsrf, CSRF_FIELD } from './csrf.ts';
import type { ScreenContext } from './portal-screen.ts';
import { adminOf } from './session.ts';

/**
 * What the Home, Sessions, Explain, API keys, Admins and Audit screens share: the sending of a page with its
 * chrome (the admin's name and CSRF token), and the steps of every POST (signed in, a capped form of the
 * handler's fields only, the session's CSRF token, then the handler). Each action is one named handler, so
 * the audit trail records it with one line there.
 */

type Ctx = ParameterizedContext<PortalState>;

/** A button's form: the CSRF token and a field or two. */
export const BUTTON_MAX_BYTES = 2048;

export function postSteps(
  context: Pick<ScreenContext, 'signedIn'>,
  maxBytes: number,
  fields: readonly string[],
  handler: Middleware<PortalState>,
): Middleware<PortalState>[] {
  return [
    ...context.signedIn,
    formBody({ maxBytes, fields: [CSRF_FIELD, ...fields] }),
    checkSessionCsrf,
    handler,
  ];
}

export function sendPage(ctx: Ctx, status: number, page: string): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = page;
}

/** The signed-in admin's name for a log line, quoted. */
export const whoOf = (ctx: Ctx): string => showValue(adminOf(ctx).session.userName);

/** The signed-in admin's name and CSRF token, which every page's forms carry. */
export function chromeOf(ctx: Ctx): { user: string; csrf: string } {
  const { session } = adminOf(ctx);
  return { user: session.userName, csrf: session.csrfToken };
}
