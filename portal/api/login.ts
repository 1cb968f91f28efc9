import type { Middleware } from 'koa';
import type { Clock } from '../../lib/clock.ts';
import type { Config } from '../../lib/config/schema.ts';
import type { SessionRepository } from '../../lib/store/store.ts';
import { invalidParam } from '../errors.ts';
import { clientIpOf, paramsOf, type PortalState } from '../state.ts';
import { parseTimeout } from './timeout.ts';
import { parseUsername } from './username.ts';

export const LOGIN_PARAMS = ['api_key', 'username'] as const;
/** Accepted (each at most once) but not required. */
export const LOGIN_OPTIONAL_PARAMS = ['timeout'] as const;

/** The configured session lifetimes, seconds; null: no limit. */
export type SessionLifetimes = Pick<Config['api'], 'sessionIdleSeconds' | 'sessionMaxSeconds'>;

/**
 * POST {base}api/login/: the client address is now `username`. Whoever was logged in on that address before is
 * replaced, not refused: a shared or reassigned machine belongs to whoever logged in last.
 *
 * The session ends at the latest `timeout` seconds from now (default: the configured maximum lifetime) and
 * after the configured idle time without traffic. Both are stored with the session, for the helpers to apply.
 */
export function login(
  sessions: Pick<SessionRepository, 'start'>,
  clock: Clock,
  lifetimes: SessionLifetimes,
): Middleware<PortalState> {
  return async function handleLogin(ctx) {
    const params = paramsOf(ctx);
    const parsed = parseUsername(params.get('username') ?? '');
    if (!parsed.ok) throw invalidParam('username', parsed.message);
    const timeout = params.get('timeout');
    let maxSeconds = lifetimes.sessionMaxSeconds;
    if (timeout !== undefined) {
      const given = parseTimeout(timeout);
      if (!given.ok) throw invalidParam('timeout', given.message);
      maxSeconds = given.seconds;
    }
    const idleSeconds = lifetimes.sessionIdleSeconds;
    const expiresAt = maxSeconds === null ? undefined : clock.now() + maxSeconds * 1000;
    const ip = clientIpOf(ctx);
    // Answered only once committed: the helper can see the session when the client reads "ok".
    await sessions.start({
      key: { kind: 'ip', value: ip },
      username: parsed.username,
      source: 'api',
      ...(expiresAt === undefined ? {} : { expiresAt }),
      ...(idleSeconds === null ? {} : { idleTimeoutMs: idleSeconds * 1000 }),
    });
    ctx.state.username = parsed.username;
    ctx.body = {
      ok: true,
      username: parsed.username,
      ip,
      ...(expiresAt === undefined ? {} : { expires_at: new Date(expiresAt).toISOString() }),
      ...(idleSeconds === null ? {} : { idle_timeout: idleSeconds }),
    };
  };
}
