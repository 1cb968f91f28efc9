import type { Middleware } from 'koa';
import { invalidParam } from '../errors.ts';
import { paramsOf, type PortalState } from '../state.ts';

/** Every named parameter present and not empty; the first one missing is named. */
export function requireParams(...names: string[]): Middleware<PortalState> {
  return async function checkPresence(ctx, next) {
    const params = paramsOf(ctx);
    for (const name of names) {
      if (!params.get(name)) throw invalidParam(name, 'missing or empty; send it as a form field');
    }
    await next();
  };
}
