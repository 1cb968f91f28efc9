import type { Middleware } from 'koa';
import type { SessionRepository } from '../../lib/store/store.ts';
import { apiActor } from '../audit.ts';
import { clientIpOf, type PortalState } from '../state.ts';

export const LOGOUT_PARAMS = ['api_key'] as const;

/**
 * POST {base}api/logout/: end the session on the client address. Idempotent, so a script may call it
 * unconditionally; `ended` says whether there was a session to end.
 */
export function logout(sessions: Pick<SessionRepository, 'end'>): Middleware<PortalState> {
  return async function handleLogout(ctx) {
    const ip = clientIpOf(ctx);
    const actor = apiActor(ctx);
    const ended =
      (await sessions.end({ kind: 'ip', value: ip }, (session) => ({
        kind: 'api.logout',
        actor,
        address: ip,
        ...(session === undefined ? { detail: { ended: false } } : { user: session.username }),
      }))) !== undefined;
    ctx.body = { ok: true, ip, ended };
  };
}
