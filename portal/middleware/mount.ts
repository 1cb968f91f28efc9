import type { Middleware } from 'koa';
import type { PortalState } from '../state.ts';

/**
 * Serve `inner` under the path of baseUrl (`/doorman/` → `/doorman/api/login/`). The prefix is compared as a
 * plain string, not handed to the router, where characters such as ':' or '*' in it would become patterns.
 * Requests outside it skip `inner` (on to the 404 at the end).
 */
export function mount<C>(basePath: string, inner: Middleware<PortalState, C>): Middleware<PortalState, C> {
  const prefix = basePath.endsWith('/') ? basePath.slice(0, -1) : basePath;
  if (prefix === '') return inner;
  return async function underBasePath(ctx, next) {
    const path = ctx.path;
    if (!path.startsWith(`${prefix}/`)) return next();
    ctx.path = path.slice(prefix.length);
    try {
      await inner(ctx, next);
    } finally {
      ctx.path = path;
    }
  };
}
