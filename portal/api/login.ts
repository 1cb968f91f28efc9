import type { Middleware } from 'koa';
import type { Commits } from '../../lib/store/group-commit.ts';
import type { SessionStore } from '../../lib/store/session-store.ts';
import { invalidParam } from '../errors.ts';
import { clientIpOf, paramsOf, type PortalState } from '../state.ts';
import { parseUsername } from './username.ts';

export const LOGIN_PARAMS = ['api_key', 'username'] as const;

/**
 * POST {base}api/login/: the client address is now `username`. Whoever was logged in on that address before is
 * replaced, not refused: a shared or reassigned machine belongs to whoever logged in last.
 */
export function login(sessions: SessionStore, commits: Commits): Middleware<PortalState> {
  return async function handleLogin(ctx) {
    const parsed = parseUsername(paramsOf(ctx).get('username') ?? '');
    if (!parsed.ok) throw invalidParam('username', parsed.message);
    const ip = clientIpOf(ctx);
    // Answered only once committed: the helper can see the session when the client reads "ok".
    await commits.run(() =>
      sessions.start({ key: { kind: 'ip', value: ip }, username: parsed.username, source: 'api' }),
    );
    ctx.state.username = parsed.username;
    ctx.body = { ok: true, username: parsed.username, ip };
  };
}
