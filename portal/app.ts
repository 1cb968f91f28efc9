import { Router, type RouterMiddleware } from '@koa/router';
import type Koa from 'koa';
import type { Clock } from '../lib/clock.ts';
import type { ProxyKeyMatcher } from '../lib/net/client-address.ts';
import type { Config } from '../lib/config/schema.ts';
import type { ApiKeyRepository, AuditRepository, SessionRepository } from '../lib/store/store.ts';
import { adminScreens, type AdminDeps } from './admin/routes.ts';
import { login, LOGIN_OPTIONAL_PARAMS, LOGIN_PARAMS } from './api/login.ts';
import { logout, LOGOUT_PARAMS } from './api/logout.ts';
import { requestAudit } from './audit.ts';
import { ApiError } from './errors.ts';
import { allowMethods } from './middleware/allow-methods.ts';
import { requireApiKey } from './middleware/api-key.ts';
import { clientIp } from './middleware/client-ip.ts';
import { formBody } from './middleware/form-body.ts';
import { KeyFailureLimiter } from './middleware/key-rate-limit.ts';
import { mount } from './middleware/mount.ts';
import { requireParams } from './middleware/require-params.ts';
import { splashPages, type SplashDeps } from './splash/routes.ts';
import { appShell } from './shell.ts';
import type { PortalState } from './state.ts';

export interface PortalDeps {
  config: Config;
  /** Each write answers once it is durable and the session helpers can see it (lib/store/store.ts). */
  sessions: SessionRepository;
  apiKeys: Pick<ApiKeyRepository, 'check'>;
  clock: Clock;
  /** One line per request and the details of every 500. Default: stderr. */
  log?: (line: string) => void;
  /**
   * Proves that a trusted proxy, not its client, wrote X-Doorman-Client (lib/security/proxy-key.ts). Without
   * it every request from a trusted proxy is refused by the API.
   */
  proxyKey?: ProxyKeyMatcher;
  /** The admin screens under {baseUrl}admin/; without this they do not exist (404 like any unknown path). */
  admin?: AdminDeps;
  /** The captive portal's splash pages under {baseUrl}portal/; without this they do not exist. */
  splash?: SplashDeps;
  /** The audit trail (store.audit): admins' actions are recorded there; without it, nowhere. */
  audit?: Pick<AuditRepository, 'record'>;
}

/**
 * The web app. Each endpoint is a fixed list of steps, cheapest refusal first: method, client address, body,
 * parameters, API key (and its rate limit, see requireApiKey), and only then the handler.
 */
export function createApp(deps: PortalDeps): Koa<PortalState> {
  const { config, sessions, apiKeys, clock } = deps;
  const log = deps.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const limiter = new KeyFailureLimiter(clock, {
    maxFailures: config.api.maxKeyFailures,
    windowSeconds: config.api.keyFailureWindowSeconds,
  });
  const guard = (params: readonly string[], optional: readonly string[] = []) => [
    allowMethods('POST'),
    clientIp(config.trustedProxies, deps.proxyKey, { unproven: 'refuse' }),
    formBody({ maxBytes: config.api.maxBodyBytes, fields: [...params, ...optional] }),
    requireParams(...params),
    requireApiKey(apiKeys, limiter),
  ];

  // strict: both spellings are listed, and no other. Scripts POST with or without the trailing slash, and
  // redirecting a POST to the canonical one would lose its body.
  const router = new Router<PortalState>({ strict: true, sensitive: true });
  router.all(
    ['/api/login/', '/api/login'],
    ...guard(LOGIN_PARAMS, LOGIN_OPTIONAL_PARAMS),
    login(sessions, clock, config.api),
  );
  router.all(['/api/logout/', '/api/logout'], ...guard(LOGOUT_PARAMS), logout(sessions));

  const api = router.routes();
  const admin =
    deps.admin === undefined
      ? undefined
      : adminScreens(
          { config, clock, log, proxyKey: deps.proxyKey, audit: requestAudit(deps.audit, log) },
          deps.admin,
        );
  const splash =
    deps.splash === undefined
      ? undefined
      : splashPages({ config, clock, log, proxyKey: deps.proxyKey, sessions }, deps.splash);
  // Everything under admin/ belongs to the admin screens (HTML), under portal/ to the splash pages, the rest
  // to the API (JSON).
  const under = (path: string, room: string) => path === `/${room}` || path.startsWith(`/${room}/`);
  const routes: RouterMiddleware<PortalState> = function screensOrApi(ctx, next) {
    if (admin !== undefined && under(ctx.path, 'admin')) return admin(ctx, next);
    if (splash !== undefined && under(ctx.path, 'portal')) return splash(ctx, next);
    return api(ctx, next);
  };

  const app = appShell(log);
  app.use(mount(new URL(config.baseUrl).pathname, routes));
  app.use(() => {
    throw new ApiError(
      'not_found',
      'no such endpoint; the API is {baseUrl}api/login/ and {baseUrl}api/logout/',
    );
  });
  return app;
}
