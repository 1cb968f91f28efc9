import type { Clock } from '../../lib/clock.ts';
import { DirectoryError } from '../../lib/directory/errors.ts';
import type { PasswordRefusal } from '../../lib/directory/password-check.ts';
import { DoormanError } from '../../lib/errors.ts';
import { addressGroup } from '../../lib/net/address.ts';
import type { MacLookup } from '../../lib/net/mac-lookup.ts';
import type { PortalSettings } from '../../lib/portal/settings.ts';
import type { FailureLimit } from '../admin/sign-in-limits.ts';
import { parseUsername } from '../api/username.ts';
import { KeyFailureLimiter } from '../middleware/key-rate-limit.ts';
import type { DirectorySource } from './directory-source.ts';
import { FailedAttempts, type FailedAttemptsOptions } from './failed-attempts.ts';
import type { Message } from './views/layout.ts';

/**
 * The sign-in of the Authentication and Device Registration modes, after the form's CSRF token: the fields
 * first, then the device (registration: its MAC), the rate limit, the directory. Renders nothing: the outcome
 * says what the page shows (routes.ts).
 */
export const SPLASH_SIGN_IN_LIMIT: FailureLimit = { maxFailures: 10, windowSeconds: 300 };
/** Longest password accepted (the directory's own limits are lower still). */
export const MAX_PASSWORD_LENGTH = 1024;

export interface SignInOptions {
  clock: Clock;
  log: (line: string) => void;
  directory: DirectorySource;
  findMac: (ip: string) => Promise<MacLookup>;
  /** Wrong sign-ins per client address group (IPv6: /64) in a window, then 429. Default 10 per 300 s. */
  signInLimit?: FailureLimit | undefined;
  failedAttempts?: FailedAttemptsOptions | undefined;
}

export type SignInOutcome =
  /** `mac`: registration mode's device. */
  | { kind: 'signed-in'; user: string; mac: Extract<MacLookup, { ok: true }> | undefined }
  /** The form again, with this status and message (`retryAfter`: seconds, for a 429). */
  | { kind: 'refused'; status: number; message: Message; mac: MacLookup | undefined; retryAfter?: number }
  | { kind: 'mac-not-found'; lookup: Extract<MacLookup, { ok: false }> };

export type SignIn = (
  ip: string,
  settings: PortalSettings,
  params: ReadonlyMap<string, string>,
) => Promise<SignInOutcome>;

export function splashSignIn(options: SignInOptions): SignIn {
  const { clock, log } = options;
  const limiter = new KeyFailureLimiter(clock, options.signInLimit ?? SPLASH_SIGN_IN_LIMIT);
  /** Sign-ins being checked per address group: counted as failures until they are known (see retryAfter). */
  const checking = new Map<string, number>();
  const failures = new FailedAttempts(clock, options.failedAttempts);

  return async function signIn(ip, settings, params) {
    const refused = (
      status: number,
      message: Message,
      mac?: MacLookup,
      retryAfter?: number,
    ): SignInOutcome => ({
      kind: 'refused',
      status,
      message,
      mac,
      ...(retryAfter === undefined ? {} : { retryAfter }),
    });
    const bad = (text: string) => refused(400, { code: 'bad_request', tone: 'error', text });
    const typed = params.get('username') ?? '';
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
      mac = await options.findMac(ip);
      if (!mac.ok) return { kind: 'mac-not-found', lookup: mac };
    }

    const group = addressGroup(ip);
    const pending = checking.get(group) ?? 0;
    const wait = limiter.retryAfter(group, pending);
    if (wait > 0) {
      const text = `Too many wrong sign-ins from this device. Try again in ${wait} seconds.`;
      return refused(429, { code: 'rate_limited', tone: 'error', text }, mac, wait);
    }
    const unavailable = (why: string) => {
      log(`portal: sign-in from ${ip}: the directory cannot be asked: ${why}`);
      const text =
        'The account directory cannot be reached just now, so your password cannot be checked. Try again in a moment.';
      return refused(503, { code: 'directory_unavailable', tone: 'error', text }, mac);
    };
    let directory;
    try {
      directory = options.directory.current();
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
      return refused(403, { code: 'wrong_password', tone: 'error', text: refusalText(refusal) }, mac);
    }
    if (user === undefined) throw new Error('a password check neither refused nor named the user');
    return { kind: 'signed-in', user, mac: mac?.ok === true ? mac : undefined };
  };
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
