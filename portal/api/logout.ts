import type { Middleware } from 'koa';
import type { SessionStore } from '../../lib/store/session-store.ts';
import { clientIpOf, type PortalState } from '../state.ts';

export const LOGOUT_PARAMS = ['api_key'] as const;

/**
 * POST {base}api/logout/: end the session on the client address. Idempotent, so a script may call it
 * unconditionally; `ended` says whether there was a session to end.
 */
export function logout(sessions: SessionStore): Middleware<PortalState> {
  return function handleLogout(ctx) {
    const ip = clientIpOf(ctx);
    const ended = sessions.end({ kind: 'ip', value: ip }) !== undefined;
    ctx.body = { ok: true, ip, ended };
  };
}
