import type { ParameterizedContext } from 'koa';
import type { AdminSession } from '../lib/store/admin-store.ts';

/** What the middleware of one request hand on to the next, in ctx.state. */
export interface PortalState {
  /** Set by clientIp: the normalised address the session is for. */
  clientIp?: string;
  /** Set by formBody: the endpoint's own parameters, each given once. Unknown parameters are not kept. */
  params?: ReadonlyMap<string, string>;
  /** Set by requireApiKey: the name of the API key the call was made with (the audit trail's actor). */
  apiKey?: string;
  /** Set by a handler on success, for the request log. */
  username?: string;
  /** Set by loadAdminSession (admin screens): the signed-in administrator and the cookie token that found them. */
  admin?: { session: AdminSession; token: string };
  /**
   * Set by the admin screens and the splash pages: the error handler shows refusals as this HTML page instead
   * of JSON. `message` is undefined for a 500, whose details stay in the log; `code` is the refusal's ApiError
   * code (undefined for a 500), for pages that carry a stable code of their own.
   */
  errorPage?: (status: number, message: string | undefined, code?: string) => string;
}

type Ctx = ParameterizedContext<PortalState>;

/** The client address; a route that asks before clientIp ran is wired wrongly (a 500, not a guess). */
export function clientIpOf(ctx: Ctx): string {
  if (ctx.state.clientIp === undefined) throw new Error('clientIp middleware has not run for this route');
  return ctx.state.clientIp;
}

/** The parsed form; a route that asks before formBody ran is wired wrongly. */
export function paramsOf(ctx: Ctx): ReadonlyMap<string, string> {
  if (ctx.state.params === undefined) throw new Error('formBody middleware has not run for this route');
  return ctx.state.params;
}
