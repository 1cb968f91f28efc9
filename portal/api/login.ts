import type { Middleware } from 'koa';
import type { Clock } from '../../lib/clock.ts';
import type { Config } from '../../lib/config/schema.ts';
import type { AuditInput } from '../../lib/audit/event.ts';
import { countLogin, countSessionEnd } from '../../lib/metrics/sessions.ts';
import type { SessionRepository } from '../../lib/store/store.ts';
import { apiActor, replacementOf } from '../audit.ts';
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
    const key = { kind: 'ip', value: ip } as const;
    const actor = apiActor(ctx);
    /** The session this login replaces, as the writing transaction found it (for the metrics). */
    let replaced: ReturnType<typeof replacementOf>;
    // Answered only once committed: the helper can see the session when the client reads "ok". Its audit
    // events are written in the same transaction.
    await sessions.start(
      {
        key,
        username: parsed.username,
        source: 'api',
        ...(expiresAt === undefined ? {} : { expiresAt }),
        ...(idleSeconds === null ? {} : { idleTimeoutMs: idleSeconds * 1000 }),
      },
      (previous) =>
        loginEvent(actor, ip, parsed.username, (replaced = replacementOf(parsed.username, previous))),
    );
    countLogin('api');
    if (replaced !== undefined) countSessionEnd(replaced.source, 'replaced');
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

/**
 * One event a login (a row per login is what the trail costs the API): api.login, or api.replaced when another
 * user's session was on the address (`replacement`: replacementOf the session the write found there), with
 * that user in detail.replaced.
 */
export function loginEvent(
  actor: string,
  ip: string,
  username: string,
  replacement: ReturnType<typeof replacementOf>,
): AuditInput {
  const login = { actor, user: username, address: ip };
  return replacement === undefined
    ? { kind: 'api.login', ...login }
    : { kind: 'api.replaced', ...login, detail: replacement };
}
