import type { Middleware } from 'koa';
import type { Clock } from '../../lib/clock.ts';
import { addressGroup } from '../../lib/net/address.ts';
import { ApiError } from '../errors.ts';
import { KeyFailureLimiter } from '../middleware/key-rate-limit.ts';
import { clientIpOf, paramsOf, type PortalState } from '../state.ts';

export interface FailureLimit {
  maxFailures: number;
  windowSeconds: number;
}

/** Wrong sign-ins per client address group: 5 in 5 minutes. */
export const ADDRESS_LIMIT: FailureLimit = { maxFailures: 5, windowSeconds: 300 };
/** Wrong sign-ins per account, from addresses it has not signed in from: 10 a minute. */
export const ACCOUNT_LIMIT: FailureLimit = { maxFailures: 10, windowSeconds: 60 };

/** Admin names are at most 64 characters: a longer one is counted by its start (and bounds the memory used). */
const ACCOUNT_KEY_LENGTH = 128;
/** Address groups remembered per account as ones it signed in from. */
const KNOWN_PER_ACCOUNT = 16;

/**
 * Wrong admin sign-ins are counted twice: per client address group (an IPv4 address, an IPv6 /64), and per
 * account, so that a guesser spreading one account's guesses over many addresses is slowed down too.
 *
 * The account limit must not let an attacker lock a real admin out for good, so it has a short window (a
 * minute: the lock ends at most a minute after the guessing stops) and it does not apply at all to an address
 * group the account has signed in from successfully since Doorman started: an admin at their usual desk is
 * never refused because of somebody else's guesses at their name. Those addresses are still under the address
 * limit, and their wrong passwords are not counted against the account. (`doorman admin passwd` works whatever
 * the limits say.)
 *
 * Failures are known only once scrypt has answered, so checks still running count as failures in both limits:
 * one check at a time per address group, and at most the account's remaining failures at once per account.
 */
export class SignInLimits {
  readonly #byAddress: KeyFailureLimiter;
  /** Names of real accounts: few, so the bound on tracked windows never makes one forget them. */
  readonly #byAccount: KeyFailureLimiter;
  /**
   * Every other name, under the same rule (so a 429 never tells a real name from a made-up one), in a table of
   * its own: a flood of made-up names fills this one and cannot push a real account's count out of the other.
   */
  readonly #byOtherName: KeyFailureLimiter;
  readonly #isAccount: (name: string) => boolean;
  readonly #checkingAddresses = new Set<string>();
  readonly #checkingAccounts = new Map<string, number>();
  /** Address groups each account signed in from, the most recent last. Only a right password adds one. */
  readonly #known = new Map<string, string[]>();

  constructor(
    clock: Clock,
    limits: { address?: FailureLimit; account?: FailureLimit; isAccount?: (name: string) => boolean } = {},
  ) {
    this.#byAddress = new KeyFailureLimiter(clock, limits.address ?? ADDRESS_LIMIT);
    this.#byAccount = new KeyFailureLimiter(clock, limits.account ?? ACCOUNT_LIMIT);
    this.#byOtherName = new KeyFailureLimiter(clock, limits.account ?? ACCOUNT_LIMIT);
    this.#isAccount = limits.isAccount ?? (() => true);
  }

  #accountLimiter(account: string): KeyFailureLimiter {
    return this.#isAccount(account) ? this.#byAccount : this.#byOtherName;
  }

  /** Before the body is read: an address group that used up its failures, or has a check running, gets 429. */
  byAddress(): Middleware<PortalState> {
    return async (ctx, next) => {
      const group = addressGroup(clientIpOf(ctx));
      const seconds = this.#byAddress.retryAfter(group);
      if (seconds > 0) {
        throw tooMany(`too many wrong sign-ins from this address; try again in ${seconds} seconds`, seconds);
      }
      if (this.#checkingAddresses.has(group)) {
        throw tooMany('a sign-in from this address is being checked already; try again in a moment', 1);
      }
      this.#checkingAddresses.add(group);
      try {
        await next();
      } finally {
        this.#checkingAddresses.delete(group);
      }
    };
  }

  /** After the body is read: an account that used up its failures gets 429, except from its known addresses. */
  byAccount(): Middleware<PortalState> {
    return async (ctx, next) => {
      const account = accountKey(paramsOf(ctx).get('user'));
      if (account === '' || this.#isKnown(account, addressGroup(clientIpOf(ctx)))) return next();
      const checking = this.#checkingAccounts.get(account) ?? 0;
      const seconds = this.accountRetryAfter(account, checking);
      if (seconds > 0) {
        throw tooMany(`too many wrong sign-ins for this user name; try again in ${seconds} seconds`, seconds);
      }
      this.#checkingAccounts.set(account, checking + 1);
      try {
        await next();
      } finally {
        const left = (this.#checkingAccounts.get(account) ?? 1) - 1;
        if (left > 0) this.#checkingAccounts.set(account, left);
        else this.#checkingAccounts.delete(account);
      }
    };
  }

  /** Seconds until `user` may be tried again from an address it has not signed in from (0: now). */
  accountRetryAfter(user: string, checking = 0): number {
    const account = accountKey(user);
    return this.#accountLimiter(account).retryAfter(account, checking);
  }

  /** A wrong name or password from `ip` for `user`. */
  failed(ip: string, user: string): void {
    const group = addressGroup(ip);
    this.#byAddress.recordFailure(group);
    const account = accountKey(user);
    if (!this.#isKnown(account, group)) this.#accountLimiter(account).recordFailure(account);
  }

  /** A right one: `ip`'s address group is now known for `user`. */
  succeeded(ip: string, user: string): void {
    const group = addressGroup(ip);
    const account = accountKey(user);
    const known = (this.#known.get(account) ?? []).filter((g) => g !== group);
    known.push(group);
    this.#known.set(account, known.slice(-KNOWN_PER_ACCOUNT));
  }

  #isKnown(account: string, group: string): boolean {
    return this.#known.get(account)?.includes(group) ?? false;
  }
}

const accountKey = (user: string | undefined): string => (user ?? '').trim().slice(0, ACCOUNT_KEY_LENGTH);

const tooMany = (message: string, seconds: number): ApiError =>
  new ApiError('too_many_requests', message, { headers: { 'Retry-After': String(seconds) } });
