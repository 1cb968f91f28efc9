import type { Middleware } from 'koa';
import { ApiError } from '../errors.ts';
import type { PortalState } from '../state.ts';

/**
 * The one error boundary. A refusal (ApiError) is shown in full: it is about the client's request. Anything
 * else is our fault: the client gets a bare 500 and the log gets the details, which may name paths or SQL.
 */
export function errorHandler(log: (line: string) => void): Middleware<PortalState> {
  return async function handleErrors(ctx, next) {
    try {
      await next();
    } catch (error) {
      if (ctx.headerSent) {
        log(`portal: error after the response started, ${ctx.method} ${ctx.path}: ${describe(error)}`);
        return;
      }
      if (error instanceof ApiError) {
        ctx.status = error.status;
        ctx.set(error.headers);
        ctx.body = error.toJSON();
        return;
      }
      log(`portal: internal error, ${ctx.method} ${ctx.path}: ${describe(error)}`);
      ctx.status = 500;
      ctx.body = { ok: false, error: 'server_error' };
    }
  };
}

const describe = (error: unknown): string =>
  error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
