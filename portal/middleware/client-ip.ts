import type { Middleware } from 'koa';
import { clientAddress } from '../../lib/net/client-address.ts';
import { ApiError } from '../errors.ts';
import type { PortalState } from '../state.ts';

/**
 * Who the session is for: the TCP peer, or what a trusted proxy says in X-Forwarded-For. Koa's own ctx.ip
 * (app.proxy) is not used: it believes the header from any peer once turned on.
 */
export function clientIp(trustedProxies: readonly string[]): Middleware<PortalState> {
  const trusted: ReadonlySet<string> = new Set(trustedProxies);
  return async function findClientIp(ctx, next) {
    const found = clientAddress(
      ctx.req.socket.remoteAddress ?? '',
      ctx.get('X-Forwarded-For') || undefined,
      trusted,
    );
    if (!found.ok) throw new ApiError('invalid_request', found.reason);
    ctx.state.clientIp = found.ip;
    await next();
  };
}
