import type { Middleware } from 'koa';
import type { Commits } from '../../lib/store/group-commit.ts';
import type { SessionStore } from '../../lib/store/session-store.ts';
import { clientIpOf, type PortalState } from '../state.ts';

export const LOGOUT_PARAMS = ['api_key'] as const;

/**
 * POST {base}api/logout/: end the session on the client address. Idempotent, so a script may call it
 * unconditionally; `ended` says whether there was a session to end.
 */
export function logout(sessions: SessionStore, commits: Commits): Middleware<PortalState> {
  return async function handleLogout(ctx) {
    const ip = clientIpOf(ctx);
    const ended = (await commits.run(() => sessions.end({ kind: 'ip', value: ip }))) !== undefined;
    ctx.body = { ok: true, ip, ended };
  };
}
