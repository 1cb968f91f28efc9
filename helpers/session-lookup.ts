import type { Clock } from '../lib/clock.ts';
import { bh, err, ok, type HelperReply, type HelperRequest } from '../lib/helper-protocol/message.ts';
import { normaliseIp } from '../lib/net/address.ts';
import { classifyMac } from '../lib/net/mac-class.ts';
import type { Session, SessionKey } from '../lib/store/session.ts';
import { explainLookupOf } from '../lib/helper-protocol/explain-lookup.ts';
import { PROBE_ADDRESS } from './authd/probe.ts';

/**
 * What the lookup reads sessions from: SQLite's SessionStore itself, or the PostgreSQL replica's sessions
 * (helpers/authd/pg-session-service.ts), whose "last seen" writes are queued and retried there.
 */
export interface LookupStore {
  find(key: SessionKey): Session | undefined;
  /** Moves whenever a session may have changed (another process's commit): cached answers are dropped then. */
  dataVersion(): number | string;
  /**
   * Record "last seen" times; a later time than the stored one wins. `seen` is the store's from then on: the
   * lookup never changes it again, so a store that writes later may keep it instead of copying it.
   */
  touch(seen: ReadonlyMap<number, number>): void;
}

interface Cached {
  id: number;
  username: string;
  expiresAt: number | undefined;
  idleTimeoutMs: number | undefined;
  /** The DB's last_seen when this was read: the latest time any helper process had written. */
  lastSeen: number;
  /** An address binding's device (lib/portal/address-binding.ts). */
  mac: string | undefined;
}

/** Cache entries kept at most; past it the cache starts over (cheap, and bounded). */
const MAX_CACHED = 200_000;

/**
 * The session lookup behind the external ACL: `%SRC %>eui` in, `OK user=NAME` or `ERR` out.
 *
 * Fields: the client IP, then optionally its MAC; Squid 5 also appends the acl's arguments (a lone `-` when
 * there are none), which are ignored. What Squid 5.7 gives for `%>eui` (measured in the lab, see issue 7): an
 * on-link IPv4 client's real MAC (`3a:48:7a:63:96:26`); `00:00:00:00:00:00` for a routed client (no MAC,
 * not `-`); for IPv6 an EUI-64 taken from the address itself, `00-00-00-00-00-00-00-00` or the interface
 * id (`ac-bf-73-ff-fe-0d-2f-93`), never the MAC: Squid does not read the IPv6 neighbour table. So only a
 * 6-byte unicast MAC (':' or '-') is looked up; zeros, an EUI-64, a group address or `-` mean "no MAC"
 * (an IPv6 registration is found through its address binding, a session on the IP).
 *
 * An address binding names the device it was made for (its MAC): when Squid gives a real MAC for the client
 * and it is another one, the binding is not this client's (the registered device left, another took the
 * address) and is passed over; the client's own MAC is looked up instead. Its end is fixed (expires_at),
 * so the traffic of whoever holds the address never prolongs it.
 *
 * Answers come from an in-process cache that is dropped whenever another process commits to the DB
 * (PRAGMA data_version, checked once per batch of input), so a login or logout is seen by the next batch;
 * hard expiry is checked against the clock on every lookup. "Last seen" is collected here and written in one
 * transaction per flush interval, not once per lookup.
 *
 * Idle limit: a session is refused once it has not been seen for longer than its limit, seen meaning the
 * latest of the DB's last_seen (what every helper process had flushed when the row was read) and this
 * process's own answers. Another process's answers count only once it has flushed them, so idle time is
 * measured to within the flush interval (the config keeps the limit at twice that interval or more). A
 * refused lookup is never counted as seen: traffic after the end cannot bring the session back.
 */
export class SessionLookup {
  readonly #store: LookupStore;
  readonly #clock: Clock;
  readonly #cache = new Map<string, Cached | null>();
  #seen = new Map<number, number>();
  /**
   * When this process last answered OK for a session with an idle limit: unlike #seen, kept after a flush,
   * because the cached row's last_seen does not move with this process's own writes (they do not change
   * data_version).
   */
  readonly #answered = new Map<number, number>();
  #version: number | string = -1;
  /** The last lookup Squid asked (never the probe's): what the admin Home screen shows through the probe. */
  #last: { at: number; ip: string; answer: 'OK' | 'ERR' } | undefined;

  /** Whether answers are cached between changes: SQLite reads cost a query; a replica's are memory already. */
  readonly #caching: boolean;

  constructor(store: LookupStore, clock: Clock, options: { cache?: boolean } = {}) {
    this.#caching = options.cache ?? true;
    this.#store = store;
    this.#clock = clock;
  }

  /** Call before each batch of requests: forget answers another process may have changed. */
  refresh(): void {
    const version = this.#store.dataVersion();
    if (version !== this.#version || this.#cache.size > MAX_CACHED) {
      this.#cache.clear();
      this.#version = version;
    }
    // Forgotten together with the cache: rows read again carry what was flushed, #seen holds the rest.
    if (this.#answered.size > MAX_CACHED) {
      this.#answered.clear();
      this.#cache.clear();
    }
  }

  handle(request: HelperRequest): HelperReply {
    // `doorman explain` asks as Squid would, after a word no Squid line starts with (lib/helper-protocol/
    // explain-lookup.ts): the same answer, but nothing recorded, so a diagnosis neither keeps an idle session
    // alive nor shows on the admin's Home screen as Squid's last lookup.
    const asked = explainLookupOf(request);
    const [ipField, macField] = asked ?? request.fields;
    if (ipField === undefined) return bh('no client address in request (format must start with %SRC)');
    const ip = normaliseIp(ipField);
    if (ip === undefined) return bh(`not an IP address: ${JSON.stringify(ipField.slice(0, 64))}`);
    const now = this.#clock.now();
    if (ip === PROBE_ADDRESS) return this.#probeAnswer();
    const mac = macField === undefined ? undefined : classifyMac(macField);
    // All zeros names no device (a routed client); anything that is not an EUI-48 (Squid's "-", an IPv6
    // client's EUI-64, an acl argument) is not a MAC; a group address never sends a request.
    const squidMac = mac?.kind === 'unicast' ? mac.mac : undefined;
    const byIp = this.#live({ kind: 'ip', value: ip }, now);
    // An address binding made for another device than the one Squid names is not this client's.
    const anotherDevice = byIp?.mac !== undefined && squidMac !== undefined && byIp.mac !== squidMac;
    const found =
      (anotherDevice ? undefined : byIp) ??
      (squidMac === undefined ? undefined : this.#live({ kind: 'mac', value: squidMac }, now));
    if (asked !== undefined) return found === undefined ? err() : ok([['user', found.username]]);
    if (found === undefined) {
      this.#last = { at: now, ip, answer: 'ERR' };
      return err();
    }
    this.#last = { at: now, ip, answer: 'OK' };
    this.#seen.set(found.id, now);
    if (found.idleTimeoutMs !== undefined) this.#answered.set(found.id, now);
    return ok([['user', found.username]]);
  }

  /**
   * The probe's answer (helpers/authd/probe.ts): ERR, as for any unknown address, carrying when Squid last
   * asked, for which address and what it was told, so `doorman serve` learns it in the same round trip that
   * proves authd alive. Nothing for Squid: it never asks about this address.
   */
  #probeAnswer(): HelperReply {
    const last = this.#last;
    if (last === undefined) return err();
    return {
      result: 'ERR',
      pairs: [
        ['last_lookup_at', String(last.at)],
        ['last_lookup_ip', last.ip],
        ['last_lookup_answer', last.answer],
      ],
    };
  }

  /**
   * Write collected "last seen" times, at most `limit` of them (a transaction of 100,000 updates would hold
   * the helper and the DB's write lock for a fifth of a second; the rest waits for the next call). Returns
   * how many are still to write.
   */
  flushSeen(limit = Infinity): number {
    if (this.#seen.size === 0) return 0;
    if (this.#seen.size <= limit) {
      // Handed over, not copied (the store may keep it: LookupStore.touch).
      const seen = this.#seen;
      this.#seen = new Map();
      try {
        this.#store.touch(seen);
      } catch (error) {
        // Not written (SQLite busy): kept for the next flush. Nothing was seen meanwhile (touch is synchronous).
        this.#seen = seen;
        throw error;
      }
      return 0;
    }
    const chunk = new Map<number, number>();
    for (const [id, seen] of this.#seen) {
      if (chunk.size >= limit) break;
      chunk.set(id, seen);
    }
    this.#store.touch(chunk);
    for (const id of chunk.keys()) this.#seen.delete(id);
    return this.#seen.size;
  }

  #live(key: SessionKey, now: number): Cached | undefined {
    const cacheKey = this.#caching ? `${key.kind}:${key.value}` : '';
    let entry = this.#caching ? this.#cache.get(cacheKey) : undefined;
    if (entry === undefined) {
      const session = this.#store.find(key);
      entry = session
        ? {
            id: session.id,
            username: session.username,
            expiresAt: session.expiresAt,
            idleTimeoutMs: session.idleTimeoutMs,
            lastSeen: session.lastSeen,
            mac: session.mac,
          }
        : null;
      if (this.#caching) this.#cache.set(cacheKey, entry);
    }
    if (entry === null || (entry.expiresAt !== undefined && entry.expiresAt <= now)) return undefined;
    if (entry.idleTimeoutMs !== undefined && now - this.#lastSeen(entry) > entry.idleTimeoutMs)
      return undefined;
    return entry;
  }

  #lastSeen(entry: Cached): number {
    return Math.max(entry.lastSeen, this.#answered.get(entry.id) ?? 0, this.#seen.get(entry.id) ?? 0);
  }
}
