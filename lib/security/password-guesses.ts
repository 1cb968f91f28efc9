import type { Clock } from '../clock.ts';
import type { PasswordCheck } from '../directory/password-check.ts';
import { showValue } from '../errors.ts';
import { addressGroup, normaliseIp } from '../net/address.ts';
import { retryWhileBusy, type Schedule } from '../store/busy.ts';
import {
  KNOWN_FOR_MS,
  type FailureKind,
  type FailureWindow,
  type SignInFailureStore,
} from '../store/sign-in-failure-store.ts';

export interface FailureLimit {
  maxFailures: number;
  windowSeconds: number;
}

export interface GuessLimits {
  account: FailureLimit;
  address: FailureLimit;
}

/** A check refused by a limit, without asking the directory. `key` is the account key or the address group. */
export interface GuessRefusal {
  kind: FailureKind;
  key: string;
  retryAfterSeconds: number;
}

export type GuardedCheck = { ok: true; check: PasswordCheck } | { ok: false; refusal: GuessRefusal };

/** The stable code of a refusal in logs (cache.log, serve's log). */
export const RATE_LIMITED = 'RATE_LIMITED';

/** Longest account key kept: login names are at most 256 characters (lib/directory/login-name.ts). */
const ACCOUNT_KEY_LENGTH = 256;

/**
 * The account a typed login name counts against: folded as loosely as any directory matches names, without a
 * `DOMAIN\` before it or an `@domain` after it, so that `alice`, `ALICE`, `ａｌｉｃｅ` (full width), `alİce`,
 * `EXAMPLE\alice` and `alice@example.test` share one counter: slapd's and AD's matching rules take such
 * variants for the same user, and a guesser must gain nothing by spelling the name differently. Folding: NFKC
 * (compatibility forms), lower, upper, lower case (ẞ, ß, ſ, ı), NFKD and no combining marks (é as e). It may join
 * distinct names (René and Rene, uids that differ only after an `@`): they then share a limit, which errs on
 * the safe side. Linear in the name's length.
 */
export function accountKey(login: string): string {
  let name = login
    .normalize('NFKC')
    .trim()
    .toLowerCase()
    .toUpperCase()
    .toLowerCase()
    .normalize('NFKD')
    .replace(/\p{M}/gu, '');
  name = name.slice(name.lastIndexOf('\\') + 1);
  const at = name.lastIndexOf('@');
  if (at > 0) name = name.slice(0, at);
  return [...name].slice(0, ACCOUNT_KEY_LENGTH).join('');
}

/** The address group a client address counts as, or undefined for none (Squid's `-`, a missing key_extras). */
export function clientGroup(ip: string | undefined): string | undefined {
  if (ip === undefined) return undefined;
  const normal = normaliseIp(ip);
  return normal === undefined ? undefined : addressGroup(normal);
}

/** Failures that count at `now` in a window of `windowMs` (0 once it has ended). */
export function failuresIn(window: FailureWindow | undefined, now: number, windowMs: number): number {
  return window !== undefined && now < window.start + windowMs ? window.failures : 0;
}

/** Seconds until a window that has used up its failures ends (at least 1). */
export function secondsLeft(window: FailureWindow | undefined, now: number, windowMs: number): number {
  return window === undefined ? 1 : Math.max(1, Math.ceil((window.start + windowMs - now) / 1000));
}

/** The cache.log / serve log words for a refusal: the code, then which limit; never the password. */
export function describeRefusal(refusal: GuessRefusal): string {
  return `${RATE_LIMITED} ${refusal.kind}=${showValue(refusal.key)} retry_after=${refusal.retryAfterSeconds}s`;
}

/**
 * Password guessing, limited the same for every way in (the splash page, the proxy's Basic prompt) and shared
 * between their processes through the session DB: past `account.maxFailures` wrong passwords for an account,
 * or `address.maxFailures` from one client address group, in a window that starts at the first, a check is
 * refused without asking the directory (so an AD never counts them towards its lockout either).
 *
 * The account limit does not apply from an address group the account has signed in from (as the admin
 * sign-in, portal/admin/sign-in-limits.ts): strangers guessing at a name never lock its owner out at their
 * usual desk, and wrong passwords from there count against the address only.
 *
 * Checks are counted before they run, so parallel guesses cannot all pass before the first failure is known:
 * from an address not known for the account, the failure is written ahead in one write transaction (limits
 * read under its lock, so two processes never both take the last one) and taken back if the password was
 * right; a right password there also makes the address known. From a known address nothing is written unless
 * the password is wrong: this process's own checks in flight count as failures instead, so a successful check
 * costs two reads (the Basic helper's hot path).
 */
export class PasswordGuesses {
  readonly #store: SignInFailureStore;
  readonly #clock: Clock;
  readonly #schedule: Schedule | undefined;
  readonly #accountMs: number;
  readonly #addressMs: number;
  readonly #limits: GuessLimits;
  /** Checks in flight from known addresses, per address group (see the class comment). */
  readonly #inFlight = new Map<string, number>();

  constructor(
    store: SignInFailureStore,
    limits: GuessLimits,
    options: { clock: Clock; schedule?: Schedule },
  ) {
    this.#store = store;
    this.#limits = limits;
    this.#clock = options.clock;
    this.#schedule = options.schedule;
    this.#accountMs = limits.account.windowSeconds * 1000;
    this.#addressMs = limits.address.windowSeconds * 1000;
  }

  /**
   * Run `check` (the directory's password check for `login`) unless a limit refuses it; count its outcome.
   * `ip`: the client's address, undefined when unknown (then only the account limit applies). An error thrown
   * by `check` (the directory cannot be asked) is nobody's guess: it counts nothing and is thrown on.
   */
  async guard(
    login: string,
    ip: string | undefined,
    check: () => Promise<PasswordCheck>,
  ): Promise<GuardedCheck> {
    const account = accountKey(login);
    const address = clientGroup(ip);
    const known =
      address !== undefined && this.#store.isKnown(account, address, this.#clock.now() - KNOWN_FOR_MS);
    return known && address !== undefined
      ? this.#fromKnown(address, check)
      : this.#counted(account, address, check);
  }

  async #fromKnown(address: string, check: () => Promise<PasswordCheck>): Promise<GuardedCheck> {
    const now = this.#clock.now();
    const window = this.#store.window('address', address);
    const failures = failuresIn(window, now, this.#addressMs);
    const inFlight = this.#inFlight.get(address) ?? 0;
    const max = this.#limits.address.maxFailures;
    if (failures + inFlight >= max) {
      // Over only because of checks still running: they end in about a second.
      const retryAfterSeconds = failures >= max ? secondsLeft(window, now, this.#addressMs) : 1;
      return { ok: false, refusal: { kind: 'address', key: address, retryAfterSeconds } };
    }
    this.#inFlight.set(address, inFlight + 1);
    let result: PasswordCheck;
    try {
      result = await check();
    } finally {
      const left = (this.#inFlight.get(address) ?? 1) - 1;
      if (left > 0) this.#inFlight.set(address, left);
      else this.#inFlight.delete(address);
    }
    if (!result.ok) {
      await this.#write(() => this.#store.addFailure('address', address, this.#clock.now(), this.#addressMs));
    }
    return { ok: true, check: result };
  }

  async #counted(
    account: string,
    address: string | undefined,
    check: () => Promise<PasswordCheck>,
  ): Promise<GuardedCheck> {
    const ahead = await this.#write(() => this.#reserve(account, address));
    if (!ahead.ok) return ahead;
    let result: PasswordCheck;
    try {
      result = await check();
    } catch (error) {
      await this.#write(() => this.#takeBack(account, address, ahead.windows));
      throw error;
    }
    if (result.ok) {
      await this.#write(() => {
        this.#takeBack(account, address, ahead.windows);
        if (address !== undefined) this.#store.learn(account, address, this.#clock.now());
      });
    }
    return { ok: true, check: result };
  }

  /** Under the write lock: refuse if a limit is used up, else count this check as a failure ahead. */
  #reserve(
    account: string,
    address: string | undefined,
  ): { ok: false; refusal: GuessRefusal } | { ok: true; windows: { account: number; address?: number } } {
    const now = this.#clock.now();
    const over = (kind: FailureKind, key: string, windowMs: number, limit: FailureLimit) => {
      const window = this.#store.window(kind, key);
      return failuresIn(window, now, windowMs) >= limit.maxFailures
        ? { kind, key, retryAfterSeconds: secondsLeft(window, now, windowMs) }
        : undefined;
    };
    const refusal =
      (address === undefined ? undefined : over('address', address, this.#addressMs, this.#limits.address)) ??
      over('account', account, this.#accountMs, this.#limits.account);
    if (refusal !== undefined) return { ok: false, refusal };
    this.#store.prune(now - Math.max(this.#accountMs, this.#addressMs));
    const windows = { account: this.#store.addFailure('account', account, now, this.#accountMs).start };
    if (address === undefined) return { ok: true, windows };
    return {
      ok: true,
      windows: {
        ...windows,
        address: this.#store.addFailure('address', address, now, this.#addressMs).start,
      },
    };
  }

  #takeBack(
    account: string,
    address: string | undefined,
    windows: { account: number; address?: number },
  ): void {
    this.#store.takeBack('account', account, windows.account);
    if (address !== undefined && windows.address !== undefined) {
      this.#store.takeBack('address', address, windows.address);
    }
  }

  /** One write transaction, tried again on timers while another process holds the lock (lib/store/busy.ts). */
  #write<T>(work: () => T): Promise<T> {
    return retryWhileBusy(() => this.#store.immediate(work), {
      clock: this.#clock,
      ...(this.#schedule === undefined ? {} : { schedule: this.#schedule }),
    });
  }
}
