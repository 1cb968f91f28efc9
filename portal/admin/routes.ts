import { Router, type RouterMiddleware } from '@koa/router';
import type { Middleware, ParameterizedContext } from 'koa';
import type { Clock } from '../../lib/clock.ts';
import type { Config } from '../../lib/config/schema.ts';
import { directoryChange } from '../../lib/audit/changes.ts';
import { DoormanError, showValue } from '../../lib/errors.ts';
import type { AdminRepository, AuditRepository } from '../../lib/store/store.ts';
import type { RequestAudit } from '../audit.ts';
import { ApiError } from '../errors.ts';
import { routeAdder } from '../middleware/allow-methods.ts';
import type { ProxyKeyMatcher } from '../../lib/net/client-address.ts';
import { clientIp } from '../middleware/client-ip.ts';
import { formBody } from '../middleware/form-body.ts';
import { clientIpOf, paramsOf, type PortalState } from '../state.ts';
import { auditScreen } from './audit-screen.ts';
import { AdminCookies } from './cookies.ts';
import { checkSessionCsrf, CSRF_FIELD, SignInCsrf } from './csrf.ts';
import type { ApplyResult, DirectoryAdmin } from './directory-admin.ts';
import { DIRECTORY_FIELDS, EMPTY_FORM, readDirectoryForm, settingsToForm } from './directory-form.ts';
import { adminsScreen } from './admins-screen.ts';
import { apiKeysScreen, type ApiKeysAdmin } from './api-keys-screen.ts';
import type { HomeProbes } from './home-checks.ts';
import { homeScreen } from './home-screen.ts';
import { adminPaths, type AdminPaths } from './paths.ts';
import type { PortalAdmin } from './portal-admin.ts';
import { explainScreen, type Explainer } from './explain-screen.ts';
import { portalScreen } from './portal-screen.ts';
import type { SeamlessControl } from './seamless-admin.ts';
import { seamlessScreen } from './seamless-screen.ts';
import { sessionsScreen, type SessionsAdmin } from './sessions-screen.ts';
import { adminOf, loadAdminSession, requireAdmin, seeOther } from './session.ts';
import { type FailureLimit, SignInLimits } from './sign-in-limits.ts';
import { directoryPage, groupsFound, type Outcome } from './views/directory.ts';
import { errorPage } from './views/error.ts';
import { signInPage } from './views/sign-in.ts';
import { STYLE } from './views/style.ts';

export interface AdminDeps {
  store: AdminRepository;
  directory: DirectoryAdmin;
  /** The captive portal screen's stores: settings, Device Groups, sessions. */
  portal: PortalAdmin;
  /**
   * Join, repair, leave and doctor for the Enable seamless screen: serve's root child (startPrivilegedSeamless).
   * Without it the screen shows the availability and says to use `doorman seamless` as root.
   */
  seamless?: SeamlessControl;
  /**
   * Why a client is or is not identified (the Explain screen): serve's gathering over the store, authd and the
   * directory. Without it the screen says to use `doorman explain`.
   */
  explain?: Explainer;
  /** The Sessions screen: search, end one, end all of a user (the store's sessions). */
  sessions: SessionsAdmin;
  /** The API keys screen: list, make, revoke (the store's API keys). */
  apiKeys: ApiKeysAdmin;
  /** The Home screen's checks of what lies outside this process (the directory, authd, the store). */
  probes?: HomeProbes;
  /** The Audit screen's reads (store.audit); without it the screen does not exist. */
  audit?: Pick<AuditRepository, 'list'>;
  /** Wrong sign-ins allowed per client address group in a window, then 429. Default: 5 per 300 s. */
  signInLimits?: FailureLimit;
  /** Wrong sign-ins allowed per account from addresses it has not signed in from. Default: 10 per 60 s. */
  accountLimits?: FailureLimit;
}

export interface AdminContext {
  config: Config;
  clock: Clock;
  log: (line: string) => void;
  /** Proves Squid wrote X-Doorman-Client (see lib/net/client-address.ts). */
  proxyKey?: ProxyKeyMatcher | undefined;
  /** The audit trail: `await audit.admin(ctx, kind, detail)` once an action is done (portal/audit.ts). */
  audit: RequestAudit;
}

type Ctx = ParameterizedContext<PortalState>;

/** The sign-in form: the password is at most 1 KiB, three times that once percent-encoded. */
const SIGN_IN_MAX_BYTES = 8 * 1024;
/** The settings form: a CA bundle of up to 64 KiB, percent-encoded. */
const DIRECTORY_MAX_BYTES = 256 * 1024;
const SIGN_OUT_MAX_BYTES = 1024;

/**
 * Headers of every admin answer, redirects and refusals included. A strict CSP: no script at all, styles only
 * from our stylesheet, forms posted only to us, never framed (clickjacking); and no Referer, so a session's
 * URLs do not leak to a linked site. Cache-Control: no-store and nosniff come from the app's own headers.
 */
const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
} as const;

/**
 * The admin screens under {base}admin/: sign-in, sign-out, Home (home-screen.ts), Sessions
 * (sessions-screen.ts), the directory settings, the captive portal (portal-screen.ts), Enable seamless
 * (seamless-screen.ts), Explain a client (explain-screen.ts), API keys (api-keys-screen.ts) and Admins
 * (admins-screen.ts). Server-rendered HTML without script. Each route is a fixed list of steps like the API's:
 * method, session or client address and rate limit, capped body, CSRF token, handler. Returns one middleware
 * for every path under /admin (after the base path is stripped); an unknown one there is an HTML 404.
 */
export function adminScreens(context: AdminContext, deps: AdminDeps): RouterMiddleware<PortalState> {
  const { config, clock, log } = context;
  const { store, directory } = deps;
  const baseUrl = new URL(config.baseUrl);
  const paths = adminPaths(baseUrl.pathname);
  const cookies = new AdminCookies(paths.root, baseUrl.protocol === 'https:');
  const signInCsrf = new SignInCsrf();
  const limits = new SignInLimits(clock, {
    ...(deps.signInLimits === undefined ? {} : { address: deps.signInLimits }),
    ...(deps.accountLimits === undefined ? {} : { account: deps.accountLimits }),
    isAccount: (name) => store.has(name),
  });
  const session = loadAdminSession(store, cookies);
  const signedIn = requireAdmin(paths.signIn);

  const renderError = (status: number, message: string | undefined) => errorPage(paths, status, message);

  const router = new Router<PortalState>({ strict: true, sensitive: true });
  const route = routeAdder(router);

  route('/admin', { GET: [(ctx) => seeOther(ctx, paths.root)] });
  route('/admin/style.css', {
    GET: [
      (ctx) => {
        ctx.type = 'text/css; charset=utf-8';
        ctx.body = STYLE;
      },
    ],
  });
  route('/admin/sign-in', {
    GET: [session, showSignIn(paths, cookies, signInCsrf)],
    POST: [
      // The address only picks a rate-limit bucket here: an admin on the proxy host itself may sign in.
      clientIp(config.trustedProxies, context.proxyKey, { unproven: 'peer' }),
      limits.byAddress(),
      formBody({ maxBytes: SIGN_IN_MAX_BYTES, fields: [CSRF_FIELD, 'user', 'password'] }),
      signInCsrf.check(cookies),
      limits.byAccount(),
      session,
      signIn(paths, cookies, signInCsrf, store, limits, log, context.audit),
    ],
  });
  route('/admin/sign-out', {
    POST: [
      session,
      signedIn,
      formBody({ maxBytes: SIGN_OUT_MAX_BYTES, fields: [CSRF_FIELD] }),
      checkSessionCsrf,
      async function signOut(ctx) {
        const admin = ctx.state.admin;
        if (admin !== undefined) {
          await store.endSession(admin.token);
          log(`admin: ${showValue(admin.session.userName)} signed out`);
        }
        cookies.clearSession(ctx);
        seeOther(ctx, paths.signIn);
      },
    ],
  });
  route('/admin/directory', {
    GET: [session, signedIn, showDirectory(paths, directory)],
    POST: [
      session,
      signedIn,
      formBody({ maxBytes: DIRECTORY_MAX_BYTES, fields: [CSRF_FIELD, ...DIRECTORY_FIELDS] }),
      checkSessionCsrf,
      applyDirectory(paths, directory, log, context.audit),
    ],
  });

  const { audit } = context;
  const screen = { paths, clock, log, audit, signedIn: [session, signedIn] };
  homeScreen(route, screen, {
    directory,
    portal: deps.portal,
    seamless: deps.seamless,
    probes: deps.probes ?? {},
  });
  sessionsScreen(route, screen, deps.sessions);
  portalScreen(route, screen, deps.portal);
  seamlessScreen(route, screen, { directory, control: deps.seamless });
  explainScreen(route, screen, deps.explain);
  apiKeysScreen(route, screen, deps.apiKeys);
  adminsScreen(route, { ...screen, cookies }, store);
  if (deps.audit !== undefined) {
    auditScreen(route, { ...screen, retentionDays: config.audit.retentionDays }, deps.audit);
  }

  const routes = router.routes();
  // Nothing runs after the admin screens: a path under /admin is theirs, answered or not.
  return async function adminPages(ctx, _next) {
    ctx.set(SECURITY_HEADERS);
    ctx.state.errorPage = renderError;
    await routes(ctx, async () => {
      throw new ApiError('not_found', 'there is no such admin page');
    });
  };
}

/** The sign-in form, with a CSRF nonce cookie (kept if the browser has a good one: several tabs work). */
function showSignIn(paths: AdminPaths, cookies: AdminCookies, csrf: SignInCsrf): Middleware<PortalState> {
  return function showSignInForm(ctx) {
    if (ctx.state.admin !== undefined) return seeOther(ctx, paths.root);
    const existing = cookies.signIn(ctx);
    const nonce = csrf.isNonce(existing) ? existing : csrf.newNonce();
    cookies.setSignIn(ctx, nonce);
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = signInPage({ paths, csrf: csrf.tokenFor(nonce) });
  };
}

/**
 * Check the name and password. Every refusal says the same ("wrong user name or password") and costs one
 * scrypt run whether or not the name exists; each counts against the client address and the account (see
 * SignInLimits). Success starts a new
 * session (any old one of this browser is ended) and retires the sign-in nonce.
 */
function signIn(
  paths: AdminPaths,
  cookies: AdminCookies,
  csrf: SignInCsrf,
  store: AdminRepository,
  limits: SignInLimits,
  log: (line: string) => void,
  audit: RequestAudit,
): Middleware<PortalState> {
  return async function checkPassword(ctx) {
    const params = paramsOf(ctx);
    const user = (params.get('user') ?? '').trim();
    const password = params.get('password') ?? '';
    const again = (status: number, error: string) => {
      const nonce = cookies.signIn(ctx) ?? '';
      ctx.status = status;
      ctx.type = 'text/html; charset=utf-8';
      ctx.body = signInPage({ paths, csrf: csrf.tokenFor(nonce), user, error });
    };
    if (user === '' || password === '') return again(400, 'Enter a user name and a password.');
    const ip = clientIpOf(ctx);
    const created = await store.signIn(user, password);
    if (created === undefined) {
      limits.failed(ip, user);
      log(`admin: failed sign-in from ${ip}`);
      // The name typed only when it is an administrator's: any other may be a password typed into the wrong
      // field (the trail never holds one), and a name no one has tells the trail's reader nothing more.
      await audit.record({
        kind: 'admin.sign-in-failed',
        actor: 'admin:-',
        address: ip,
        detail: { name: store.has(user) ? user : null },
      });
      return again(403, 'Wrong user name or password.');
    }
    limits.succeeded(ip, user);
    const old = ctx.state.admin;
    if (old !== undefined) await store.endSession(old.token);
    cookies.setSession(ctx, created.token, (created.expiresAt - created.createdAt) / 1000);
    cookies.clearSignIn(ctx);
    ctx.state.username = user;
    log(`admin: ${showValue(user)} signed in from ${ip}`);
    await audit.record({ kind: 'admin.sign-in', actor: `admin:${user}`, address: ip });
    seeOther(ctx, paths.root);
  };
}

function showDirectory(paths: AdminPaths, directory: DirectoryAdmin): Middleware<PortalState> {
  return function showDirectoryForm(ctx) {
    const { current, unreadable } = readCurrent(directory);
    render(ctx, 200, {
      paths,
      user: adminOf(ctx).session.userName,
      csrf: adminOf(ctx).session.csrfToken,
      values: current === undefined ? EMPTY_FORM : settingsToForm(current.settings),
      hasPassword: current?.hasPassword ?? false,
      configured: current !== undefined,
      unreadable,
    });
  };
}

/**
 * The settings in force. Stored settings that cannot be read (a missing password file, say) are not a 500:
 * the page says why and offers the form, so the admin can apply them again.
 */
function readCurrent(directory: DirectoryAdmin): {
  current: ReturnType<DirectoryAdmin['current']>;
  unreadable: string | undefined;
} {
  try {
    return { current: directory.current(), unreadable: undefined };
  } catch (error) {
    if (!(error instanceof DoormanError)) throw error;
    return { current: undefined, unreadable: error.message };
  }
}

/**
 * Save & apply. The form is checked here first (all problems at once, the directory not contacted); then the
 * directory settings store validates again, connects, binds and counts groups, and keeps the new settings only
 * if all of that worked. Either way the page shows what was typed, except the password.
 */
function applyDirectory(
  paths: AdminPaths,
  directory: DirectoryAdmin,
  log: (line: string) => void,
  audit: RequestAudit,
): Middleware<PortalState> {
  return async function saveAndApply(ctx) {
    const admin = adminOf(ctx);
    const { current } = readCurrent(directory);
    const form = readDirectoryForm(paramsOf(ctx), current?.hasPassword ?? false);
    const passwordTyped = form.password !== undefined;
    const { outcome, status } =
      form.problems.length > 0
        ? { outcome: { kind: 'problems', problems: form.problems, passwordTyped } as const, status: 400 }
        : outcomeOf(await directory.apply(form.input, form.password), passwordTyped);
    const who = showValue(admin.session.userName);
    if (outcome.kind === 'applied') {
      log(`admin: ${who} applied directory settings: ${groupsFound(outcome.groupCount)}`);
    } else if (outcome.kind === 'failed') {
      log(`admin: ${who}: directory settings not applied: ${outcome.code}`);
    }
    const after = outcome.kind === 'applied' ? readCurrent(directory).current : current;
    if (outcome.kind === 'applied' && after !== undefined) {
      await audit.admin(
        ctx,
        'settings.saved',
        directoryChange(current?.settings, after.settings, passwordTyped),
      );
    }
    render(ctx, status, {
      paths,
      user: admin.session.userName,
      csrf: admin.session.csrfToken,
      values:
        outcome.kind === 'applied' && after !== undefined ? settingsToForm(after.settings) : form.values,
      hasPassword: after?.hasPassword ?? false,
      configured: after !== undefined,
      unreadable: undefined,
      outcome,
    });
  };
}

/** The page for what apply() answered: 200 applied, 400 for field problems, 502 when the directory failed. */
function outcomeOf(result: ApplyResult, passwordTyped: boolean): { outcome: Outcome; status: number } {
  if (result.ok) {
    return {
      outcome: { kind: 'applied', groupCount: result.groupCount, message: result.message },
      status: 200,
    };
  }
  if (result.problems !== undefined && result.problems.length > 0) {
    return { outcome: { kind: 'problems', problems: result.problems, passwordTyped }, status: 400 };
  }
  const error = result.error ?? { code: 'UNKNOWN', message: 'the settings could not be applied' };
  return {
    outcome: { kind: 'failed', code: error.code, message: error.message, passwordTyped },
    status: 502,
  };
}

function render(ctx: Ctx, status: number, view: Parameters<typeof directoryPage>[0]): void {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = directoryPage(view);
}
