import type { Router } from '@koa/router';
import type { Middleware } from 'koa';
import { ApiError } from '../errors.ts';
import type { PortalState } from '../state.ts';

/** 405 with Allow for any other method, OPTIONS and HEAD included: the API has no use for either. */
export function allowMethods(...methods: string[]): Middleware<PortalState> {
  const allow = methods.join(', ');
  return async function checkMethod(ctx, next) {
    if (!methods.includes(ctx.method)) {
      throw new ApiError('method_not_allowed', `${ctx.method} is not allowed here; use ${allow}`, {
        headers: { Allow: allow },
      });
    }
    await next();
  };
}

/** A page's handlers by method: GET (HEAD too) and POST. */
export interface MethodHandlers {
  GET?: Middleware<PortalState>[];
  POST?: Middleware<PortalState>[];
}

/** Adds one path's handlers to `router`, with a 405 naming the allowed methods for any other. */
export type AddRoute = (path: string, handlers: MethodHandlers) => void;

export function routeAdder(router: Router<PortalState>): AddRoute {
  return (path, handlers) => {
    if (handlers.GET) router.get(path, ...handlers.GET);
    if (handlers.POST) router.post(path, ...handlers.POST);
    // Reached only when neither of the above matched the method.
    router.all(
      path,
      allowMethods(...(handlers.GET ? ['GET', 'HEAD'] : []), ...(handlers.POST ? ['POST'] : [])),
    );
  };
}
