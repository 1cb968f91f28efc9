import type { Middleware } from 'koa';
import { clientAddress, type ProxyKeyMatcher } from '../../lib/net/client-address.ts';
import { PROXY_CLIENT_HEADER } from '../../lib/security/proxy-key.ts';
import { ApiError } from '../errors.ts';
import type { PortalState } from '../state.ts';

export interface ClientIpOptions {
  /**
   * A request from a trusted proxy that does not prove it wrote the client address (see clientAddress):
   * `refuse` where the address is what the request acts on (sessions), `peer` where it only picks a rate-limit
   * bucket (admin sign-in), so an administrator on the proxy host itself can still sign in.
   */
  unproven: 'refuse' | 'peer';
}

/**
 * Who the request is from: the TCP peer, or what a trusted proxy wrote in X-Doorman-Client with the proxy key.
 * Koa's own ctx.ip (app.proxy) is not used: it believes X-Forwarded-For from any peer once turned on.
 */
export function clientIp(
  trustedProxies: readonly string[],
  proxyKey: ProxyKeyMatcher | undefined,
  options: ClientIpOptions,
): Middleware<PortalState> {
  const trusted: ReadonlySet<string> = new Set(trustedProxies);
  return async function findClientIp(ctx, next) {
    const found = clientAddress(
      ctx.req.socket.remoteAddress ?? '',
      ctx.get(PROXY_CLIENT_HEADER) || undefined,
      trusted,
      proxyKey,
    );
    if (found.ok) ctx.state.clientIp = found.ip;
    else if (found.kind === 'unproven' && options.unproven === 'peer') ctx.state.clientIp = found.peer;
    else if (found.kind === 'unproven') throw new ApiError('unproven_client', found.reason);
    else throw new ApiError('invalid_request', found.reason);
    await next();
  };
}
