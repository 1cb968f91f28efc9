import type { Middleware, ParameterizedContext } from 'koa';
import { DoormanError } from '../../lib/errors.ts';
import { BUSY_RETRY_AFTER_SECONDS, isBusy } from '../../lib/store/busy.ts';
import { ApiError } from '../errors.ts';
import type { PortalState } from '../state.ts';

/**
 * The one error boundary. A refusal (ApiError) is shown in full: it is about the client's request. Anything
 * else is our fault: the client gets a bare 500 and the log gets the details, which may name paths or SQL.
 * JSON for the API; the admin screens set ctx.state.errorPage and get the same answers as an HTML page.
 *
 * The one fault that is not ours: the session DB locked by another process (a write that waited its deadline
 * on timers, StoreBusyError, or a statement that met SQLITE_BUSY). That is a 503 with Retry-After and the
 * reason, so a login script tries again and an operator knows where to look, never a 500. The same for a store
 * that cannot be reached (STORE_UNAVAILABLE: PostgreSQL away, or no answer within the write's deadline, after
 * which the write rolls back): no box answers 200 for a write the others cannot see.
 */
export function errorHandler(log: (line: string) => void): Middleware<PortalState> {
  return async function handleErrors(ctx, next) {
    try {
      await next();
    } catch (thrown) {
      if (ctx.headerSent) {
        log(`portal: error after the response started, ${ctx.method} ${ctx.path}: ${describe(thrown)}`);
        return;
      }
      const busy = isBusy(thrown);
      if (busy) log(`portal: ${ctx.method} ${ctx.path}: the session DB is locked by another process: 503`);
      const away = !busy && thrown instanceof DoormanError && thrown.code === 'STORE_UNAVAILABLE';
      if (away) log(`portal: ${ctx.method} ${ctx.path}: ${thrown.message}: 503`);
      const error = busy ? busyError() : away ? awayError() : thrown;
      if (error instanceof ApiError) {
        ctx.status = error.status;
        ctx.set(error.headers);
        show(ctx, error.toJSON(), error.message, error.code);
        return;
      }
      log(`portal: internal error, ${ctx.method} ${ctx.path}: ${describe(error)}`);
      ctx.status = 500;
      show(ctx, { ok: false, error: 'server_error' }, undefined, undefined);
    }
  };
}

const busyError = (): ApiError =>
  new ApiError(
    'service_unavailable',
    `the session database is locked by another process; try again in ${BUSY_RETRY_AFTER_SECONDS} seconds`,
    { headers: { 'Retry-After': String(BUSY_RETRY_AFTER_SECONDS) } },
  );

const awayError = (): ApiError =>
  new ApiError(
    'service_unavailable',
    `the session store cannot be reached; try again in ${BUSY_RETRY_AFTER_SECONDS} seconds`,
    { headers: { 'Retry-After': String(BUSY_RETRY_AFTER_SECONDS) } },
  );

function show(
  ctx: ParameterizedContext<PortalState>,
  json: object,
  message: string | undefined,
  code: string | undefined,
): void {
  const page = ctx.state.errorPage;
  if (page === undefined) {
    ctx.body = json;
  } else {
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = page(ctx.status, message, code);
  }
}

const describe = (error: unknown): string =>
  error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
