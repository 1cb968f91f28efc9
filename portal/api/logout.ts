import type { Middleware } from 'koa';
import { countSessionEnd } from '../../lib/metrics/sessions.ts';
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
    const session = await sessions.end({ kind: 'ip', value: ip }, (found) => ({
      kind: 'api.logout',
      actor,
      address: ip,
      ...(found === undefined ? { detail: { ended: false } } : { user: found.username }),
    }));
    if (session !== undefined) countSessionEnd(session.source, 'logout');
    const ended = session !== undefined;
    ctx.body = { ok: true, ip, ended };
  };
}
