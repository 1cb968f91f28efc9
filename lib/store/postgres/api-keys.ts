import postgres from 'postgres';
import type { Clock } from '../../clock.ts';
import { DoormanError } from '../../errors.ts';
import type { Log } from '../../log.ts';
import { generateApiKey } from '../../security/api-key.ts';
import {
  acceptedKey,
  apiKeyNameTaken,
  checkApiKeyName,
  lastUseDue,
  LAST_USED_RETRY_MS,
  noSuchApiKey,
  toApiKeyInfo,
  type ApiKeyInfo,
  type ApiKeyRow,
} from '../api-key-rules.ts';
import type { Schedule } from '../busy.ts';
import type { ApiKeyRepository } from '../store.ts';
import type { Sql } from './connect.ts';
import type { Replica } from './replica.ts';
import { writeTable } from './write.ts';

export interface PgApiKeysOptions {
  /** For the retry of "last used" while PostgreSQL is away; default setTimeout (unref'd). */
  schedule?: Schedule;
  /** Where a "last used" write that failed for another reason is reported. Default: stderr. */
  log?: Log;
}

/**
 * The login API's keys on PostgreSQL (the ApiKeyStore of SQLite, shared by every box): verify() answers from
 * this process's copy of the table (lib/store/postgres/replica.ts), read whole at each change (a site has a
 * handful of keys), so a request never waits on the network; a key created or revoked on one box is known to
 * the others once their copy has caught up. The name is unique by the table's own UNIQUE constraint, so two
 * boxes creating the same name at once get the same answer.
 */
export class PgApiKeys implements ApiKeyRepository {
  readonly #sql: Sql;
  readonly #replica: Replica;
  readonly #clock: Clock;
  readonly #schedule: Schedule;
  readonly #log: Log;
  /** The table as last read, by key id, and in list() order. */
  #byKeyId = new Map<string, ApiKeyRow>();
  #ordered: ApiKeyRow[] = [];
  /** "Last used" times not written yet, by key id. */
  readonly #pendingUsed = new Map<string, number>();
  /** The last time asked to be written, by key id: the copy shows it only once the write has come back. */
  readonly #askedUsed = new Map<string, number>();
  #writing = false;
  #retryScheduled = false;

  constructor(sql: Sql, replica: Replica, clock: Clock, options: PgApiKeysOptions = {}) {
    this.#sql = sql;
    this.#replica = replica;
    this.#clock = clock;
    this.#schedule = options.schedule ?? ((task, ms) => void setTimeout(task, ms).unref());
    this.#log = options.log ?? ((line) => void process.stderr.write(`${line}\n`));
    replica.table('api_keys', {
      load: async (tx) => {
        const rows = await tx<ApiKeyRow[]>`
          SELECT name, key_id, secret_hash, created_at, last_used_at, revoked_at FROM api_keys`;
        return () => {
          this.#byKeyId = new Map(rows.map((row) => [row.key_id, row]));
          this.#ordered = [...rows].sort(
            (a, b) => a.created_at - b.created_at || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
          );
        };
      },
    });
  }

  /** Make a key. The returned `key` is the only copy there will ever be. */
  async create(name: string): Promise<{ key: string; info: ApiKeyInfo }> {
    checkApiKeyName(name);
    const fresh = generateApiKey();
    try {
      const row = await writeTable(this.#sql, this.#replica, 'api_keys', async (tx, change) => {
        const [inserted] = await tx<ApiKeyRow[]>`
          INSERT INTO api_keys (name, key_id, secret_hash, created_at, change)
          VALUES (${name}, ${fresh.keyId}, ${fresh.secretHash}, ${this.#clock.now()}, ${change})
          RETURNING name, key_id, secret_hash, created_at, last_used_at, revoked_at`;
        return inserted as ApiKeyRow;
      });
      return { key: fresh.key, info: toApiKeyInfo(row) };
    } catch (error) {
      if (error instanceof postgres.PostgresError && error.constraint_name === 'api_keys_name_key')
        throw apiKeyNameTaken(name);
      throw error;
    }
  }

  /** A well-formed, known, unrevoked key (as this process's copy holds them); the same work in every case. */
  verify(presented: string): boolean {
    return this.check(presented) !== undefined;
  }

  /** The name of the key, when verify() would accept it (for the audit trail's actor); the same work. */
  check(presented: string): string | undefined {
    const row = acceptedKey(presented, (keyId) => this.#byKeyId.get(keyId));
    if (row === undefined) return undefined;
    const now = this.#clock.now();
    const asked = this.#askedUsed.get(row.key_id);
    const known = asked === undefined ? row.last_used_at : Math.max(asked, row.last_used_at ?? asked);
    if (this.#pendingUsed.has(row.key_id) || lastUseDue(known, now)) {
      this.#pendingUsed.set(row.key_id, now);
      this.#askedUsed.set(row.key_id, now);
      void this.#writeUsed();
    }
    return row.name;
  }

  /**
   * Write the pending "last used" times, one write at a time. Bookkeeping, so it never fails or holds up the
   * request that uses the key: while PostgreSQL is away the times stay pending and are tried again a second
   * later (and at the next use of a key); any other failure is logged and the times dropped. A later time
   * than the stored one wins (several boxes record uses of one key).
   */
  async #writeUsed(): Promise<void> {
    if (this.#writing || this.#pendingUsed.size === 0) return;
    this.#writing = true;
    const batch = new Map(this.#pendingUsed);
    let again = false;
    try {
      await writeTable(this.#sql, this.#replica, 'api_keys', async (tx, change) => {
        await tx`
          UPDATE api_keys SET last_used_at = greatest(last_used_at, used.at), change = ${change}
          FROM (SELECT unnest(${[...batch.keys()]}::text[]) AS key_id,
                       unnest(${[...batch.values()]}::bigint[]) AS at) AS used
          WHERE api_keys.key_id = used.key_id`;
      });
      again = true;
    } catch (error) {
      if (error instanceof DoormanError && error.code === 'STORE_UNAVAILABLE') return this.#retryLater();
      this.#log(`api keys: cannot record when a key was last used: ${(error as Error).message}`);
    } finally {
      this.#writing = false;
    }
    for (const [keyId, at] of batch) if (this.#pendingUsed.get(keyId) === at) this.#pendingUsed.delete(keyId);
    // A use that came while this one was written.
    if (again) await this.#writeUsed();
  }

  #retryLater(): void {
    if (this.#retryScheduled) return;
    this.#retryScheduled = true;
    this.#schedule(() => {
      this.#retryScheduled = false;
      void this.#writeUsed();
    }, LAST_USED_RETRY_MS);
  }

  list(): ApiKeyInfo[] {
    return this.#ordered.map(toApiKeyInfo);
  }

  /** Revoke by name; effective for the next request on every box once its copy has caught up. */
  async revoke(name: string): Promise<ApiKeyInfo> {
    const row = await writeTable(this.#sql, this.#replica, 'api_keys', async (tx, change) => {
      const [updated] = await tx<ApiKeyRow[]>`
        UPDATE api_keys SET revoked_at = coalesce(revoked_at, ${this.#clock.now()}), change = ${change}
        WHERE name = ${name}
        RETURNING name, key_id, secret_hash, created_at, last_used_at, revoked_at`;
      if (updated === undefined) throw noSuchApiKey(name);
      return updated;
    });
    return toApiKeyInfo(row);
  }
}
