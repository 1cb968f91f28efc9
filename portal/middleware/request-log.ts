import type { Middleware } from 'koa';
import { showValue } from '../../lib/errors.ts';
import type { PortalState } from '../state.ts';

/**
 * One line per request. The path is logged without its query string, and no form value but the username of a
 * successful login ever is: an API key must not reach a log, even one sent by mistake in a URL.
 */
export function requestLog(log: (line: string) => void): Middleware<PortalState> {
  return async function logRequest(ctx, next) {
    const path = ctx.path;
    const started = performance.now();
    try {
      await next();
    } finally {
      const ms = Math.round(performance.now() - started);
      const ip = ctx.state.clientIp ?? ctx.req.socket.remoteAddress ?? '-';
      const user = ctx.state.username === undefined ? '' : ` user=${showValue(ctx.state.username, 256)}`;
      log(`portal: ${ctx.method} ${showValue(path, 200)} ${ctx.status} ip=${ip}${user} ${ms}ms`);
    }
  };
}
