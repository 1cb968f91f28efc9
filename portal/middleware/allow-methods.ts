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
