import type { Statement } from 'better-sqlite3';
import type { Db } from './database.ts';

/** One client address's NTLM handshakes in an hour: what authd flushes. */
export interface NtlmClientCount {
  /** An IP address, or '-' for handshakes whose address Squid did not send. */
  address: string;
  handshakes: number;
  /** The last one, ms since the epoch. */
  lastSeen: number;
}

/** The doctor's view: the addresses seen since a time, most handshakes first, and how many there were. */
export interface NtlmClientsSeen {
  clients: NtlmClientCount[];
  /** Distinct addresses since then (clients holds at most the limit asked for). */
  addresses: number;
}

const HOUR_MS = 3_600_000;
/** Rows older than this are deleted at each flush: the doctor looks back one day. */
export const NTLM_CLIENTS_KEPT_MS = 2 * 86_400_000;

/**
 * The session DB's `ntlm_clients` table (schema 7): counts per client address and hour, added by authd's
 * flush (one transaction a minute at most, never per request) and read by the seamless doctor. Statements are
 * prepared once.
 */
export class NtlmClientStore {
  readonly #db: Db;
  readonly #add: Statement<{ address: string; hour: number; handshakes: number; lastSeen: number }>;
  readonly #prune: Statement<{ before: number }>;
  readonly #top: Statement<{ since: number; limit: number }, NtlmClientCount>;
  readonly #distinct: Statement<{ since: number }, unknown>;

  constructor(db: Db) {
    this.#db = db;
    this.#add = db.prepare(`
      INSERT INTO ntlm_clients (address, hour, handshakes, last_seen) VALUES (@address, @hour, @handshakes, @lastSeen)
      ON CONFLICT (hour, address) DO UPDATE SET
        handshakes = handshakes + excluded.handshakes,
        last_seen = max(last_seen, excluded.last_seen)`);
    this.#prune = db.prepare('DELETE FROM ntlm_clients WHERE hour < @before');
    this.#top = db.prepare(`
      SELECT address, sum(handshakes) AS handshakes, max(last_seen) AS lastSeen FROM ntlm_clients
      WHERE hour >= @since GROUP BY address ORDER BY handshakes DESC, address LIMIT @limit`);
    this.#distinct = db
      .prepare('SELECT count(DISTINCT address) FROM ntlm_clients WHERE hour >= @since')
      .pluck();
  }

  /** Add counts seen up to `now` (each in the hour of its last handshake), and drop what is too old. */
  add(counts: readonly NtlmClientCount[], now: number): void {
    this.#db.transaction(() => {
      for (const { address, handshakes, lastSeen } of counts) {
        this.#add.run({ address, hour: lastSeen - (lastSeen % HOUR_MS), handshakes, lastSeen });
      }
      this.#prune.run({ before: now - NTLM_CLIENTS_KEPT_MS });
    })();
  }

  /** The addresses seen in the hours from `since` (rounded down to its hour), at most `limit` of them. */
  seenSince(since: number, limit: number): NtlmClientsSeen {
    const from = since - (since % HOUR_MS);
    return {
      clients: this.#top.all({ since: from, limit }),
      addresses: Number(this.#distinct.get({ since: from }) ?? 0),
    };
  }
}
