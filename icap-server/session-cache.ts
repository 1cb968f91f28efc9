import type { Clock } from '../lib/clock.ts';
import { isLive } from '../lib/portal/portal-sessions.ts';
import type { Session } from '../lib/store/session.ts';
import type { SessionRepository } from '../lib/store/store.ts';

/** What the cache reads: the store's find. */
export type SessionReader = Pick<SessionRepository, 'find'>;

/** Addresses remembered at most; past it the cache starts over (cheap, and bounded). */
const MAX_CACHED = 100_000;

/**
 * "Has this address a live session?" for the ICAP decision, answered from memory while the DB has not
 * changed. A read from the session DB costs ~10-25 µs here (a read transaction: file locks and a stat), more
 * than the rest of an ICAP answer. The caller passes the store's change stamp (SessionRepository.changeStamp,
 * read once per turn of the event loop), and every answer, found or not, is dropped when it moves: a sign-in, a
 * logout, a Clear current sessions, a "last seen" written by the session helper, in this process or any
 * other. So a change is seen from the next turn on. Hard expiry and the idle limit are judged against the
 * clock on every call (isLive): the session helper refuses a session idle past its limit, so Squid sends the
 * client's traffic here, and counting it as identified would let the client browse on, unnamed, instead of
 * sending it back to the splash page. The DB's last_seen trails the helper's own view and is never later, so
 * a session idle by this test is idle for the helper too.
 */
export class SessionCache {
  readonly #clock: Clock;
  readonly #cache = new Map<string, Session | null>();
  #store: SessionReader | undefined;
  #stamp: string | undefined;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /**
   * Whether `ip` (normalised) has a live IP session in `store` (the DB can be reopened: a new store), whose
   * change stamp is `stamp`.
   */
  identified(store: SessionReader, stamp: string, ip: string): boolean {
    if (store !== this.#store) {
      this.#store = store;
      this.#stamp = undefined;
      this.#cache.clear();
    }
    if (stamp !== this.#stamp || this.#cache.size >= MAX_CACHED) {
      this.#stamp = stamp;
      this.#cache.clear();
    }
    let entry = this.#cache.get(ip);
    if (entry === undefined) {
      entry = store.find({ kind: 'ip', value: ip }) ?? null;
      this.#cache.set(ip, entry);
    }
    return entry !== null && isLive(entry, this.#clock.now());
  }

  /** Forget what is known about `ip`: this process has just written a session for it. */
  forget(ip: string): void {
    this.#cache.delete(ip);
  }
}
