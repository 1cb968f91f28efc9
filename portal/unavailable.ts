import type Koa from 'koa';
import { ApiError } from './errors.ts';
import { appShell } from './shell.ts';
import type { PortalState } from './state.ts';

/**
 * The web app while the session DB cannot be opened: every request gets a JSON 503 (`service_unavailable`) that
 * says why (the operator's to fix: no secret in it) and Retry-After, logged like any other request.
 */
export function unavailableApp(reason: () => string, log: (line: string) => void): Koa<PortalState> {
  const app = appShell(log);
  app.use(() => {
    throw new ApiError('service_unavailable', `the session DB cannot be opened: ${reason()}`, {
      headers: { 'Retry-After': '1' },
    });
  });
  return app;
}
