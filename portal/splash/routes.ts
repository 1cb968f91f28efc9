import { Router, type RouterMiddleware } from '@koa/router';
import type { Middleware, ParameterizedContext } from 'koa';
import type { Clock } from '../../lib/clock.ts';
import type { Config } from '../../lib/config/schema.ts';
import { DirectoryError } from '../../lib/directory/errors.ts';
import type { PasswordRefusal } from '../../lib/directory/password-check.ts';
import { DoormanError, showValue } from '../../lib/errors.ts';
import { addressGroup } from '../../lib/net/address.ts';
import type { ProxyKeyMatcher } from '../../lib/net/client-address.ts';
import type { MacLookup } from '../../lib/net/mac-lookup.ts';
import {
  agreementSession,
  authenticationSession,
  liveSessionFor,
  registrationSession,
  startPortalSession,
} from '../../lib/portal/portal-sessions.ts';
import type { DeviceGroup, PortalSettings } from '../../lib/portal/settings.ts';
import type { Commits } from '../../lib/store/group-commit.ts';
import type { Session, SessionKey, SessionStore, StartSession } from '../../lib/store/session-store.ts';
import { readCookie, serializeCookie } from '../admin/cookies.ts';
import { html } from '../admin/html.ts';
import type { FailureLimit } from '../admin/sign-in-limits.ts';
import { seeOther } from '../admin/session.ts';
import { parseUsername } from '../api/username.ts';
import { ApiError, invalidParam } from '../errors.ts';
import { allowMethods, routeAdder } from '../middleware/allow-methods.ts';
import { clientIp } from '../middleware/client-ip.ts';
import { formBody } from '../middleware/form-body.ts';
import { KeyFailureLimiter } from '../middleware/key-rate-limit.ts';
import { clientIpOf, paramsOf, type PortalState } from '../state.ts';
import { CAPTIVE_JSON, captiveState } from './captive-api.ts';
import { CSRF_FIELD, CSRF_MAX_AGE_SECONDS, SplashCsrf } from './csrf.ts';
import type { DirectorySource } from './directory-source.ts';
import { FailedAttempts, type FailedAttemptsOptions } from './failed-attempts.ts';
import { checkNextUrl } from './next-url.ts';
import { splashPaths } from './paths.ts';
import type { Message, SplashCode } from './views/layout.ts';
import { connectedPage, formPage, noticePage, type DeviceView, type FormMode } from './views/pages.ts';
import { SPLASH_STYLE } from './views/style.ts';

export interface SplashDeps {
  /** The portal settings in force, read on every request so that a change applies at once. */
  settings: { load(): PortalSettings };
  deviceGroups: { activeGroupFor(ip: string): DeviceGroup | undefined };
  directory: DirectorySource;
  /** The client's MAC (lib/net/find-mac.ts with a MacLookupCache in production). */
  findMac: (ip: string) => Promise<MacLookup>;
  /** Where the CSRF key is derived from (doorman serve: the proxy key); random per process without it. */
  csrfSecret?: string | Uint8Array;
  /** Wrong sign-ins per client address group (IPv6: /64) in a window, then 429. Default 10 per 300 s. */
  signInLimit?: FailureLimit;
  failedAttempts?: FailedAttemptsOptions;
}

export interface SplashContext {
  config: Config;
  clock: Clock;
  log: (line: string) => void;
  proxyKey?: ProxyKeyMatcher | undefined;
  sessions: SessionStore;
  commits: Commits;
}

export const SPLASH_SIGN_IN_LIMIT: FailureLimit = { maxFailures: 10, windowSeconds: 300 };
/** The CSRF nonce's cookie, scoped to {base}portal/. */
export const SPLASH_COOKIE = 'doorman_portal';
export const SPLASH_FIELDS = [CSRF_FIELD, 'url', 'username', 'password', 'agree'] as const;
/** Longest password accepted (the directory's own limits are lower still). */
export const MAX_PASSWORD_LENGTH = 1024;
/**
 * The form body: a user name (256 characters), a password (1024), the URL (2000) and the token, each up to
 * three times longer once percent-encoded (4-byte characters: up to 12 bytes each), with room to spare.
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

/** ApiError codes (from the shared middleware) as the splash page's codes. */
const CODE_OF: Readonly<Record<string, SplashCode>> = {
  forbidden: 'csrf',
  too_many_requests: 'rate_limited',
  unproven_client: 'unproven_client',
  service_unavailable: 'unavailable',
};

const ERROR_TITLES: Readonly<Record<number, string>> = {
  403: 'This form cannot be used',
  429: 'Too many attempts',
  500: 'Something went wrong',
  503: 'Try again in a moment',
};

/**
 * The splash pages under {base}portal/ (Koa, server-rendered, no script):
 * - `GET portal/?url=…`: the page for the current mode (or why there is none for this device);
 * - `POST portal/`: accept, sign in or register; 303 to the original URL (only an absolute http(s) one) or
 *   to `portal/done`; a refusal is the page again with a 4xx (5xx when the directory or DB cannot be used);
 * - `GET portal/done`: who the device is connected as;
 * - `GET portal/api`: the RFC 8908 Captive Portal API (application/captive+json);
 * - `GET portal/style.css`.
 * Every page carries `<p id="portal-message" data-code="…">` when it has something to say (see SPLASH_CODES).
 */
export function splashPages(context: SplashContext, deps: SplashDeps): RouterMiddleware<PortalState> {
  const { config, clock, log, sessions, commits } = context;
  const baseUrl = new URL(config.baseUrl);
  const paths = splashPaths(baseUrl.pathname);
  const portalUrl = new URL(paths.root, baseUrl).href;
  const secure = baseUrl.protocol === 'https:';
  // Checked now: a base path a cookie cannot carry is a start-up error, not a failure at the first visitor.
  serializeCookie(SPLASH_COOKIE, '', { path: paths.root, secure, maxAgeSeconds: 0 });
  const csrf = new SplashCsrf(clock, deps.csrfSecret === undefined ? {} : { secret: deps.csrfSecret });
  const limiter = new KeyFailureLimiter(clock, deps.signInLimit ?? SPLASH_SIGN_IN_LIMIT);
  /** Sign-ins being checked per address group: counted as failures until they are known (see retryAfter). */
  const checking = new Map<string, number>();
  const failures = new FailedAttempts(clock, deps.failedAttempts);
  const findClient = clientIp(config.trustedProxies, context.proxyKey, { unproven: 'refuse' });

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

  const render = (ctx: Ctx, status: number, page: string) => {
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = page;
  };
  const notice = (ctx: Ctx, status: number, title: string, message: Message, more: Partial<Notice> = {}) =>
    render(ctx, status, noticePage({ paths, title, message, ...more }));

  const errorPage = (status: number, message: string | undefined, code?: string): string => {
    const splashCode: SplashCode =
      code === undefined ? 'server_error' : (CODE_OF[code] ?? (status < 500 ? 'bad_request' : 'unavailable'));
    const title =
      ERROR_TITLES[status] ?? (status < 500 ? 'This request cannot be used' : 'Something went wrong');
    const text =
      splashCode === 'csrf'
        ? 'This form has expired or did not come from this page. Open the sign-in page again and retry.'
        : (message ?? 'The server could not complete this request. The details are in its log.');
    return noticePage({
      paths,
      title,
      message: { code: splashCode, tone: 'error', text },
      link: { href: paths.root, text: 'Back to the sign-in page' },
    });
  };

  /** The keys a client may be identified by: its address, and in registration mode its MAC. */
  const keysOf = (ip: string, mac: MacLookup | undefined): SessionKey[] => [
    { kind: 'ip', value: ip },
    ...(mac?.ok === true ? [{ kind: 'mac' as const, value: mac.mac }] : []),
  ];
  const deviceOf = (mac: MacLookup | undefined): DeviceView | undefined =>
    mac?.ok === true ? { mac: mac.mac, randomised: mac.locallyAdministered } : undefined;

  const showConnected = (ctx: Ctx, session: Session, next: string | undefined) => {
    const device =
      session.key.kind === 'mac'
        ? { mac: session.key.value, randomised: (parseInt(session.key.value.slice(0, 2), 16) & 2) !== 0 }
        : undefined;
    render(
      ctx,
      200,
      connectedPage({
        paths,
        username: session.username,
        device,
        expiresAt: session.expiresAt,
        idleTimeoutMs: session.idleTimeoutMs,
        next,
      }),
    );
  };

  const portalOff = (ctx: Ctx, status: number) =>
    notice(ctx, status, 'No sign-in needed', {
      code: 'portal_off',
      tone: 'info',
      text: 'The captive portal of this network is switched off: there is nothing to sign in to here.',
    });

  const noDeviceGroup = (ctx: Ctx, ip: string) =>
    notice(ctx, 403, 'This device cannot get access here', {
      code: 'no_device_group',
      tone: 'error',
      text: html`Web access on this network is only for devices in an active device group, and this device's
        address (<span class="device">${ip}</span>) is in none. Accepting the policy again would not change
        that: ask the network's administrator.`,
    });

  const macNotFound = (ctx: Ctx, lookup: Extract<MacLookup, { ok: false }>) => {
    const ours = lookup.reason === 'lookup-failed' || lookup.reason === 'invalid-address';
    // The details (interface names, routes) are for the administrator's log, not for the visitor's page.
    log(`portal: device registration: ${lookup.message}`);
    const why: Record<string, string> = {
      'not-on-link':
        'This device is not on the same network (subnet or VLAN) as the proxy: it reaches it through a router, ' +
        'which hides its hardware (MAC) address, and devices are registered by that address. Connect to the ' +
        'network this sign-in page belongs to (for example its Wi-Fi), or ask the network’s administrator.',
      local: 'This is the proxy itself, not a device on its network: there is no device to register.',
      'lookup-failed':
        'The server could not look up this device’s hardware (MAC) address just now. Try again in a moment; ' +
        'if it keeps happening, tell the network’s administrator.',
    };
    notice(
      ctx,
      ours ? 503 : 403,
      'This device cannot be found',
      {
        code: 'mac_not_found',
        tone: 'error',
        text:
          why[lookup.reason] ??
          'The proxy cannot see this device’s hardware (MAC) address right now, and devices are registered by ' +
            'that address. Make sure the device is connected to this network directly (not through a router, ' +
            'another subnet or VLAN), reload this page, or ask the network’s administrator.',
      },
      {
        link: { href: paths.root, text: 'Try again' },
      },
    );
  };

  /** GET portal/: the page for the current mode. */
  const showPortal: Middleware<PortalState> = async function showPortal(ctx) {
    const ip = clientIpOf(ctx);
    const next = nextFromQuery(ctx.querystring);
    const settings = deps.settings.load();
    if (settings.mode === 'off') return portalOff(ctx, 200);
    const mac = settings.mode === 'registration' ? await deps.findMac(ip) : undefined;
    const live = liveSessionFor(sessions, keysOf(ip, mac), clock.now());
    if (live !== undefined) return showConnected(ctx, live, next);
    if (settings.mode === 'agreement' && deps.deviceGroups.activeGroupFor(ip) === undefined) {
      return noDeviceGroup(ctx, ip);
    }
    if (mac !== undefined && !mac.ok) return macNotFound(ctx, mac);
    render(ctx, 200, formPageFor(ctx, settings, next ?? '', { device: deviceOf(mac) }));
  };

  const formPageFor = (
    ctx: Ctx,
    settings: PortalSettings,
    url: string,
    more: { device?: DeviceView | undefined; username?: string; message?: Message },
  ) =>
    formPage({
      paths,
      mode: settings.mode as FormMode,
      csrf: tokenFor(ctx),
      url,
      policy: settings.policyText,
      clearDate: settings.registrationClearDate,
      ...(more.device === undefined ? {} : { device: more.device }),
      ...(more.username === undefined ? {} : { username: more.username }),
      ...(more.message === undefined ? {} : { message: more.message }),
    });

  /** POST portal/: after the body and the CSRF token have been checked. */
  const submit: Middleware<PortalState> = async function submit(ctx) {
    const ip = clientIpOf(ctx);
    const params = paramsOf(ctx);
    const rawUrl = params.get('url') ?? '';
    const next = nextOrFail(rawUrl);
    const settings = deps.settings.load();
    const done = next ?? paths.done;
    const started = async (start: StartSession, what: string) => {
      await startPortalSession(sessions, commits, start, { clientIp: ip, settings });
      ctx.state.username = start.username;
      log(`portal: ${ip} ${what}`);
      seeOther(ctx, done);
    };

    if (settings.mode === 'off') return portalOff(ctx, 409);
    if (settings.mode === 'agreement') {
      const group = deps.deviceGroups.activeGroupFor(ip);
      if (group === undefined) return noDeviceGroup(ctx, ip);
      return started(
        agreementSession(ip, group.name, settings, clock.now()),
        `accepted the usage policy (Device Group ${showValue(group.name)})`,
      );
    }

    // Authentication and registration: the fields first, then the device, the rate limit, the directory.
    const typed = params.get('username') ?? '';
    const again = (status: number, message: Message, device?: DeviceView) =>
      render(
        ctx,
        status,
        formPageFor(ctx, settings, next ?? '', {
          device,
          message,
          ...(typed.length <= 256 ? { username: typed.trim() } : {}),
        }),
      );
    const bad = (text: string) => again(400, { code: 'bad_request', tone: 'error', text });
    const parsed = parseUsername(typed);
    if (!parsed.ok) {
      return bad(
        typed.trim() === ''
          ? 'Enter your user name.'
          : `User name: at most 256 characters and no control characters (${[...typed].length} given).`,
      );
    }
    const password = params.get('password') ?? '';
    if (password === '') return bad('Enter your password.');
    if (password.length > MAX_PASSWORD_LENGTH) {
      return bad(`Password: at most ${MAX_PASSWORD_LENGTH} characters.`);
    }
    if (settings.policyText.trim() !== '' && params.get('agree') !== 'yes') {
      return bad('Tick the box to accept the usage policy: you can only sign in once you have accepted it.');
    }
    let mac: MacLookup | undefined;
    if (settings.mode === 'registration') {
      mac = await deps.findMac(ip);
      if (!mac.ok) return macNotFound(ctx, mac);
    }
    const device = deviceOf(mac);

    const group = addressGroup(ip);
    const pending = checking.get(group) ?? 0;
    const wait = limiter.retryAfter(group, pending);
    if (wait > 0) {
      ctx.set('Retry-After', String(wait));
      return again(
        429,
        {
          code: 'rate_limited',
          tone: 'error',
          text: `Too many wrong sign-ins from this device. Try again in ${wait} seconds.`,
        },
        device,
      );
    }
    const unavailable = (why: string) => {
      log(`portal: sign-in from ${ip}: the directory cannot be asked: ${why}`);
      return again(
        503,
        {
          code: 'directory_unavailable',
          tone: 'error',
          text: 'The account directory cannot be reached just now, so your password cannot be checked. Try again in a moment.',
        },
        device,
      );
    };
    let directory;
    try {
      directory = deps.directory.current();
    } catch (error) {
      if (error instanceof DoormanError) return unavailable(error.message);
      throw error;
    }
    if (directory === undefined) return unavailable('no directory is applied (doorman directory set)');

    checking.set(group, pending + 1);
    let refusal: PasswordRefusal | undefined;
    let user: string | undefined;
    try {
      refusal = failures.refusal(directory.version, parsed.username, password);
      if (refusal === undefined) {
        const result = await directory.checkPassword(parsed.username, password);
        if (result.ok) user = result.user;
        else {
          refusal = result.reason;
          failures.remember(directory.version, parsed.username, password, refusal);
        }
      }
    } catch (error) {
      if (error instanceof DirectoryError) return unavailable(error.message);
      throw error;
    } finally {
      const left = (checking.get(group) ?? 1) - 1;
      if (left > 0) checking.set(group, left);
      else checking.delete(group);
    }
    if (refusal !== undefined) {
      limiter.recordFailure(group);
      log(`portal: failed sign-in from ${ip}: ${refusal}`);
      return again(403, { code: 'wrong_password', tone: 'error', text: refusalText(refusal) }, device);
    }
    if (user === undefined) throw new Error('a password check neither refused nor named the user');
    const now = clock.now();
    if (mac?.ok === true) {
      return started(
        registrationSession(mac.mac, user, settings, now),
        `registered ${mac.mac} to ${showValue(user)}`,
      );
    }
    return started(authenticationSession(ip, user, settings, now), `signed in as ${showValue(user)}`);
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
    showConnected(ctx, live, undefined);
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
    ctx.state.errorPage = errorPage;
    await routes(ctx, async () => {
      throw new ApiError('not_found', 'there is no such page; the sign-in page is {baseUrl}portal/');
    });
  };
}

type Notice = Parameters<typeof noticePage>[0];

/** The `url` query parameter of GET portal/: absent or empty is fine, anything but one good URL is a 400. */
function nextFromQuery(querystring: string): string | undefined {
  const values = new URLSearchParams(querystring).getAll('url');
  if (values.length > 1) throw invalidParam('url', 'given more than once; send it once');
  return nextOrFail(values[0] ?? '');
}

function nextOrFail(raw: string): string | undefined {
  if (raw === '') return undefined;
  const checked = checkNextUrl(raw);
  if (!checked.ok) throw invalidParam('url', checked.message);
  return checked.url;
}

/** What a refused sign-in is told: wrong name or password alike, so names cannot be probed. */
export function refusalText(reason: PasswordRefusal): string {
  switch (reason) {
    case 'password-expired':
    case 'must-change-password':
      return 'Your password has expired or must be changed. Change it first (on a computer of your organisation), then sign in here.';
    case 'account-expired':
    case 'logon-restricted':
      return 'This account may not sign in now (it has expired, or this is outside its permitted hours or devices).';
    default:
      return 'Wrong user name or password.';
  }
}
