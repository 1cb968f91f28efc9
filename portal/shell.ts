import Koa from 'koa';
import { apiHeaders } from './middleware/api-headers.ts';
import { errorHandler } from './middleware/error-handler.ts';
import { koaErrorLog, requestLog } from './middleware/request-log.ts';
import type { PortalState } from './state.ts';

/**
 * What every Doorman web app starts with, before its routes: the one-line request log, the one error boundary
 * (details below 500 only) and the API's headers. Koa prints what reaches it (a response stream that fails,
 * say) to stderr as a multi-line stack trace unless the app has an 'error' listener: ours writes one line to
 * the log like everything else.
 */
export function appShell(log: (line: string) => void): Koa<PortalState> {
  const app = new Koa<PortalState>();
  app.silent = true;
  app.on('error', koaErrorLog(log));
  app.use(requestLog(log));
  app.use(errorHandler(log));
  app.use(apiHeaders);
  return app;
}
