import type { Middleware, ParameterizedContext } from 'koa';
import { oneLine } from '../../lib/log.ts';
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

/**
 * Koa's 'error' event: what got past the error handler (a response stream that failed, a client gone while its
 * answer was written). Koa would print it to stderr as a multi-line stack trace; here it is one log line. Like
 * Koa's default, errors meant for the client (404s, `expose`) are not logged.
 */
export function koaErrorLog(
  log: (line: string) => void,
): (error: unknown, ctx?: ParameterizedContext<PortalState>) => void {
  return (error, ctx) => {
    const e = error as { status?: unknown; expose?: unknown } | undefined;
    if (e?.status === 404 || e?.expose === true) return;
    const where = ctx === undefined ? '' : ` ${ctx.method} ${showValue(ctx.path, 200)}`;
    const what = error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
    log(`portal: error${where}: ${oneLine(what)}`);
  };
}
