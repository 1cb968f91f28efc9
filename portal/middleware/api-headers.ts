import type { Middleware } from 'koa';
import type { PortalState } from '../state.ts';

/**
 * Headers every answer carries, refusals included: a login result is about one client at one moment and must
 * not be kept by any cache, and a browser must not guess a type other than the JSON we send.
 */
export const apiHeaders: Middleware<PortalState> = async function apiHeaders(ctx, next) {
  ctx.set('Cache-Control', 'no-store');
  ctx.set('X-Content-Type-Options', 'nosniff');
  await next();
};
