import { Router, type RouterMiddleware } from '@koa/router';
import type { Middleware, ParameterizedContext } from 'koa';
import type { AuditInput } from '../../lib/audit/event.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Config } from '../../lib/config/schema.ts';
import { showValue } from '../../lib/errors.ts';
import type { ProxyKeyMatcher } from '../../lib/net/client-address.ts';
import type { MacLookup } from '../../lib/net/mac-lookup.ts';
import {
  authenticationSession,
  liveSessionFor,
  registrationSession,
} from '../../lib/portal/portal-sessions.ts';
import type { PortalSettings } from '../../lib/portal/settings.ts';
import { PORTAL_URL_SIGNATURE_FIELD, type PortalUrlSigner } from '../../lib/security/portal-url-signature.ts';
import type { SessionKey, StartSession } from '../../lib/store/session.ts';
import type { DeviceGroupRepository, SessionRepository } from '../../lib/store/store.ts';
import { readCookie, serializeCookie } from '../admin/cookies.ts';
import type { PasswordGuesses } from '../../lib/security/password-guesses.ts';
import { seeOther } from '../admin/session.ts';
import { ApiError } from '../errors.ts';
import { allowMethods, routeAdder } from '../middleware/allow-methods.ts';
import { clientIp } from '../middleware/client-ip.ts';
import { formBody } from '../middleware/form-body.ts';
import { clientIpOf, paramsOf, type PortalState } from '../state.ts';
import { CAPTIVE_JSON, captiveState } from './captive-api.ts';
import { CSRF_FIELD, CSRF_MAX_AGE_SECONDS, SplashCsrf } from './csrf.ts';
import {
  destinationFromForm,
  destinationFromQuery,
  NO_DESTINATION,
  type DestinationCheck,
} from './destination.ts';
import type { DirectorySource } from './directory-source.ts';
import type { FailedAttemptsOptions } from './failed-attempts.ts';
import { splashPaths } from './paths.ts';
import { deviceOf, render, splashResponses } from './responses.ts';
import { splashSignIn } from './sign-in.ts';
import type { Message } from './views/layout.ts';
import { formPage, type DeviceView, type FormMode } from './views/pages.ts';
import { SPLASH_STYLE } from './views/style.ts';
import { replacementDetail, replacementOf } from '../audit.ts';
import { countLogin, countSessionEnd } from '../../lib/metrics/sessions.ts';
import { countSplash, splashRefusal } from '../../lib/metrics/web.ts';

export { MAX_PASSWORD_LENGTH, refusalText } from './sign-in.ts';

export interface SplashDeps {
  /** The portal settings in force, read on every request so that a change applies at once. */
  settings: { load(): PortalSettings };
  /**
   * Which active group holds a device, for the page. The Accept itself is decided again by the store, inside
   * the transaction that writes it (SessionRepository.startAgreement).
   */
  deviceGroups: Pick<DeviceGroupRepository, 'activeGroupFor'>;
  directory: DirectorySource;
  /** The client's MAC (lib/net/find-mac.ts with a MacLookupCache in production). */
  findMac: (ip: string) => Promise<MacLookup>;
  /** Where the CSRF key is derived from (doorman serve: the proxy key); random per process without it. */
  csrfSecret?: string | Uint8Array;
  /** Checks the original URL's signature, keyed as the ICAP service that signs it (see destination.ts). */
  portalUrls: Pick<PortalUrlSigner, 'verify'>;
  /** Wrong passwords per account and per address group, shared with the Basic helper (config passwordGuessing). */
  guesses: PasswordGuesses;
  failedAttempts?: FailedAttemptsOptions;
}

export interface SplashContext {
  config: Config;
  clock: Clock;
  log: (line: string) => void;
  proxyKey?: ProxyKeyMatcher | undefined;
  /** Read on every page; written once committed (the session helper sees it when the browser goes on). */
  sessions: SessionRepository;
}

/** The CSRF nonce's cookie, scoped to {base}portal/. */
export const SPLASH_COOKIE = 'doorman_portal';
export const SPLASH_FIELDS = [
  CSRF_FIELD,
  'url',
  PORTAL_URL_SIGNATURE_FIELD,
  'username',
  'password',
  'agree',
] as const;
/**
 * The form body: a user name (256 characters), a password (1024), the URL (2000), its signature (56) and the
 * token, each up to three times longer once percent-encoded (4-byte characters: up to 12 bytes each), with
 * room to spare.
 */
export const SPLASH_MAX_BODY_BYTES = 32 * 1024;

/**
 * Headers of every splash answer. No script, styles only from our stylesheet, never framed, no Referer (the
 * original URL is in the page's address). form-action also allows http: and https:, because browsers apply it
 * to the redirect after the POST, which goes on to the page the user was on its way to.
 */
export const SPLASH_SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'self'; form-action 'self' http: https:; frame-ancestors 'none'; base-uri 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
} as const;

type Ctx = ParameterizedContext<PortalState>;

/**
 * The splash pages under {base}portal/ (Koa, server-rendered, no script):
 * - `GET portal/?url=…&sig=…`: the page for the current mode (or why there is none for this device);
 * - `POST portal/`: accept, sign in or register; 303 to the original URL when the ICAP service signed it for
 *   this device (destination.ts), else to `portal/done`; a refusal is the page again with a 4xx (5xx when the
 *   directory or DB cannot be used);
 * - `GET portal/done`: who the device is connected as;
 * - `GET portal/api`: the RFC 8908 Captive Portal API (application/captive+json);
 * - `GET portal/style.css`.
 * Every page carries `<p id="portal-message" data-code="…">` when it has something to say (see SPLASH_CODES).
 */
export function splashPages(context: SplashContext, deps: SplashDeps): RouterMiddleware<PortalState> {
  const { config, clock, log, sessions } = context;
  const baseUrl = new URL(config.baseUrl);
  const paths = splashPaths(baseUrl.pathname);
  const portalUrl = new URL(paths.root, baseUrl).href;
  const secure = baseUrl.protocol === 'https:';
  // Checked now: a base path a cookie cannot carry is a start-up error, not a failure at the first visitor.
  serializeCookie(SPLASH_COOKIE, '', { path: paths.root, secure, maxAgeSeconds: 0 });
  const csrf = new SplashCsrf(clock, deps.csrfSecret === undefined ? {} : { secret: deps.csrfSecret });
  const findClient = clientIp(config.trustedProxies, context.proxyKey, { unproven: 'refuse' });
  const respond = splashResponses(paths, log);
  const signIn = splashSignIn({
    clock,
    log,
    directory: deps.directory,
    findMac: deps.findMac,
    guesses: deps.guesses,
    failedAttempts: deps.failedAttempts,
  });

  const nonceOf = (ctx: Ctx) => readCookie(ctx.get('Cookie') || undefined, SPLASH_COOKIE);
  /** The browser's nonce (a new one if it has none), and the form token for it. */
  const tokenFor = (ctx: Ctx): string => {
    const existing = nonceOf(ctx);
    const nonce = csrf.isNonce(existing) ? existing : csrf.newNonce();
    if (nonce !== existing) {
      ctx.append(
        'Set-Cookie',
        serializeCookie(SPLASH_COOKIE, nonce, {
          path: paths.root,
          secure,
          maxAgeSeconds: CSRF_MAX_AGE_SECONDS,
          sameSite: 'Lax',
        }),
      );
    }
    return csrf.tokenFor(nonce, clientIpOf(ctx));
  };

  /** The keys a client may be identified by: its address, and in registration mode its MAC. */
  const keysOf = (ip: string, mac: MacLookup | undefined): SessionKey[] => [
    { kind: 'ip', value: ip },
    ...(mac?.ok === true ? [{ kind: 'mac' as const, value: mac.mac }] : []),
  ];

  const formPageFor = (
    ctx: Ctx,
    settings: PortalSettings,
    next: DestinationCheck,
    more: { device?: DeviceView | undefined; username?: string; message?: Message },
  ) =>
    formPage({
      paths,
      mode: settings.mode as FormMode,
      csrf: tokenFor(ctx),
      ...(next.destination?.signed ?? NO_DESTINATION),
      policy: settings.policyText,
      clearDate: settings.registrationClearDate,
      ...(more.device === undefined ? {} : { device: more.device }),
      ...(more.username === undefined ? {} : { username: more.username }),
      ...(more.message === undefined ? {} : { message: more.message }),
    });

  /** GET portal/: the page for the current mode. */
  const showPortal: Middleware<PortalState> = async function showPortal(ctx) {
    const ip = clientIpOf(ctx);
    const next = destinationFromQuery(ctx.querystring, ip, deps.portalUrls);
    const settings = deps.settings.load();
    if (settings.mode === 'off') return respond.portalOff(ctx, 200);
    const mac = settings.mode === 'registration' ? await deps.findMac(ip) : undefined;
    const live = liveSessionFor(sessions, keysOf(ip, mac), clock.now());
    if (live !== undefined) return respond.connected(ctx, live, next.destination?.href);
    if (settings.mode === 'agreement' && deps.deviceGroups.activeGroupFor(ip) === undefined) {
      return respond.noDeviceGroup(ctx, ip);
    }
    if (mac !== undefined && !mac.ok) return respond.macNotFound(ctx, mac);
    render(ctx, 200, formPageFor(ctx, settings, next, { device: deviceOf(mac) }));
  };

  /** POST portal/: after the body and the CSRF token have been checked. */
  const submit: Middleware<PortalState> = async function submit(ctx) {
    const ip = clientIpOf(ctx);
    const params = paramsOf(ctx);
    const next = destinationFromForm(params, ip, deps.portalUrls);
    const settings = deps.settings.load();
    const signedIn = (username: string, what: string) => {
      ctx.state.username = username;
      log(`portal: ${ip} ${what}`);
      // Said in the log, never followed: a link someone made, or a page left open too long.
      if (next.refused !== undefined) log(`portal: ${ip}: not going on to the url given (${next.refused})`);
      seeOther(ctx, next.destination?.href ?? paths.done);
    };

    if (settings.mode === 'off') return respond.portalOff(ctx, 409);
    if (settings.mode === 'agreement') {
      const started = await sessions.startAgreement(ip, settings, {
        kind: 'portal.agreement',
        // No user: whoever is at the address accepted (the Device Group, decided in the write, is in detail).
        actor: 'portal',
        address: ip,
      });
      if (started === undefined) return (countSplash('no_device_group'), respond.noDeviceGroup(ctx, ip));
      const { session, group } = started;
      countSplash('agreed');
      countLogin(session.source);
      return signedIn(session.username, `accepted the usage policy (Device Group ${showValue(group.name)})`);
    }

    const outcome = await signIn(ip, settings, params);
    if (outcome.kind === 'mac-not-found')
      return (countSplash('mac_not_found'), respond.macNotFound(ctx, outcome.lookup));
    if (outcome.kind === 'refused') {
      countSplash(splashRefusal(outcome.status));
      if (outcome.retryAfter !== undefined) ctx.set('Retry-After', String(outcome.retryAfter));
      const typed = params.get('username') ?? '';
      return render(
        ctx,
        outcome.status,
        formPageFor(ctx, settings, next, {
          device: deviceOf(outcome.mac),
          message: outcome.message,
          ...(typed.length <= 256 ? { username: typed.trim() } : {}),
        }),
      );
    }
    const { user, mac } = outcome;
    // Another user's live session on the key (the address, or the MAC registered), or on the IPv6 address a
    // registration binds, is replaced: said in the event's detail and counted, as the login API's are.
    const start = (session: StartSession, what: string, audit: AuditInput) =>
      sessions
        .startPortal(session, { clientIp: ip, settings }, (previous, onAddress) => {
          const detail = replacementDetail(session.username, previous, onAddress);
          return detail === undefined ? audit : { ...audit, detail: { ...audit.detail, ...detail } };
        })
        .then(({ replaced, replacedOnAddress }) => {
          countSplash(session.source === 'registration' ? 'registered' : 'signed_in');
          countLogin(session.source);
          for (const previous of [replaced, replacedOnAddress]) {
            const replacement = replacementOf(session.username, previous);
            if (replacement !== undefined) countSessionEnd(replacement.source, 'replaced');
          }
          signedIn(session.username, what);
        });
    const event = { actor: `user:${user}`, user, address: ip } as const;
    if (mac !== undefined) {
      return start(
        registrationSession(mac.mac, user, settings, clock.now()),
        `registered ${mac.mac} to ${showValue(user)}`,
        { kind: 'portal.registration', ...event, detail: { mac: mac.mac } },
      );
    }
    return start(authenticationSession(ip, user, settings, clock.now()), `signed in as ${showValue(user)}`, {
      kind: 'portal.sign-in',
      ...event,
    });
  };

  const checkCsrf: Middleware<PortalState> = async function checkCsrf(ctx, next) {
    const token = paramsOf(ctx).get(CSRF_FIELD) ?? '';
    if (!csrf.verify(nonceOf(ctx), clientIpOf(ctx), token)) {
      throw new ApiError('forbidden', 'this form has expired or did not come from this page');
    }
    await next();
  };

  /** GET portal/done: who this device is connected as; back to the portal when it is not. */
  const showDone: Middleware<PortalState> = async function showDone(ctx) {
    const ip = clientIpOf(ctx);
    const settings = deps.settings.load();
    const mac = settings.mode === 'registration' ? await deps.findMac(ip) : undefined;
    const live = liveSessionFor(sessions, keysOf(ip, mac), clock.now());
    if (live === undefined) return seeOther(ctx, paths.root);
    respond.connected(ctx, live, undefined);
  };

  /** GET portal/api: RFC 8908. */
  const captiveApi: Middleware<PortalState> = async function captiveApi(ctx) {
    const ip = clientIpOf(ctx);
    const settings = deps.settings.load();
    const mac = settings.mode === 'registration' ? await deps.findMac(ip) : undefined;
    const live = liveSessionFor(sessions, keysOf(ip, mac), clock.now());
    // The state of one client at one moment: no cache may keep it, a shared one least of all.
    ctx.set('Cache-Control', 'private, no-store');
    ctx.type = CAPTIVE_JSON;
    ctx.body = JSON.stringify(captiveState(portalUrl, live, settings.mode === 'off', clock.now()));
  };

  const router = new Router<PortalState>({ strict: true, sensitive: true });
  const route = routeAdder(router);

  route('/portal', {
    GET: [(ctx) => seeOther(ctx, ctx.querystring === '' ? paths.root : `${paths.root}?${ctx.querystring}`)],
  });
  route('/portal/', {
    GET: [findClient, showPortal],
    POST: [
      findClient,
      formBody({ maxBytes: SPLASH_MAX_BODY_BYTES, fields: SPLASH_FIELDS }),
      checkCsrf,
      submit,
    ],
  });
  route('/portal/done', { GET: [findClient, showDone] });
  route('/portal/style.css', {
    GET: [
      (ctx) => {
        ctx.type = 'text/css; charset=utf-8';
        ctx.body = SPLASH_STYLE;
      },
    ],
  });
  const routes = router.routes();

  const apiRouter = new Router<PortalState>({ strict: true, sensitive: true });
  apiRouter.get('/portal/api', findClient, captiveApi);
  apiRouter.all('/portal/api', allowMethods('GET', 'HEAD'));
  const api = apiRouter.routes();

  // Nothing runs after the splash pages: a path under /portal is theirs, answered or not.
  return async function splash(ctx, _next) {
    if (ctx.path === '/portal/api') {
      // JSON, refusals included (no errorPage).
      return api(ctx, async () => {
        throw new ApiError('not_found', 'no such endpoint');
      });
    }
    ctx.set(SPLASH_SECURITY_HEADERS);
    ctx.state.errorPage = respond.errorPage;
    await routes(ctx, async () => {
      throw new ApiError('not_found', 'there is no such page; the sign-in page is {baseUrl}portal/');
    });
  };
}
