import type { Clock } from '../../lib/clock.ts';
import { DirectoryError } from '../../lib/directory/errors.ts';
import type { PasswordCheck, PasswordRefusal } from '../../lib/directory/password-check.ts';
import { DoormanError } from '../../lib/errors.ts';
import type { MacLookup } from '../../lib/net/mac-lookup.ts';
import type { PortalSettings } from '../../lib/portal/settings.ts';
import { describeRefusal, type PasswordGuesses } from '../../lib/security/password-guesses.ts';
import { parseUsername } from '../api/username.ts';
import type { DirectorySource } from './directory-source.ts';
import { FailedAttempts, type FailedAttemptsOptions } from './failed-attempts.ts';
import type { Message } from './views/layout.ts';

/**
 * The sign-in of the Authentication and Device Registration modes, after the form's CSRF token: the fields
 * first, then the device (registration: its MAC), the rate limit, the directory. Renders nothing: the outcome
 * says what the page shows (routes.ts).
 */
/** Longest password accepted (the directory's own limits are lower still). */
export const MAX_PASSWORD_LENGTH = 1024;

export interface SignInOptions {
  clock: Clock;
  log: (line: string) => void;
  directory: DirectorySource;
  findMac: (ip: string) => Promise<MacLookup>;
  /**
   * Wrong passwords per account and per client address group (IPv6: /64), then 429: the limits the Basic
   * helper shares (lib/security/password-guesses.ts, config passwordGuessing).
   */
  guesses: PasswordGuesses;
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

    // The same attempt refused lately is not asked again (failed-attempts.ts), but still counts as a guess.
    const check = async (): Promise<PasswordCheck> => {
      const lately = failures.refusal(directory.version, parsed.username, password);
      if (lately !== undefined) return { ok: false, reason: lately };
      const result = await directory.checkPassword(parsed.username, password);
      if (!result.ok) failures.remember(directory.version, parsed.username, password, result.reason);
      return result;
    };
    let result: PasswordCheck;
    try {
      const guarded = await options.guesses.guard(parsed.username, ip, check);
      if (!guarded.ok) {
        const { kind, retryAfterSeconds: wait } = guarded.refusal;
        log(`portal: sign-in from ${ip}: ${describeRefusal(guarded.refusal)}`);
        const text = `Too many wrong sign-ins ${kind === 'address' ? 'from this device' : 'for this user name'}. Try again in ${wait} seconds.`;
        return refused(429, { code: 'rate_limited', tone: 'error', text }, mac, wait);
      }
      result = guarded.check;
    } catch (error) {
      if (error instanceof DirectoryError) return unavailable(error.message);
      throw error;
    }
    if (!result.ok) {
      log(`portal: failed sign-in from ${ip}: ${result.reason}`);
      return refused(403, { code: 'wrong_password', tone: 'error', text: refusalText(result.reason) }, mac);
    }
    return { kind: 'signed-in', user: result.user, mac: mac?.ok === true ? mac : undefined };
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
