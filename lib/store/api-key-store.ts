import type { Statement } from 'better-sqlite3';
import type { Clock } from '../clock.ts';
import { generateApiKey } from '../security/api-key.ts';
import {
  acceptedKey,
  apiKeyNameTaken,
  checkApiKeyName,
  lastUseDue,
  LAST_USED_RETRY_MS,
  noSuchApiKey,
  toApiKeyInfo as toInfo,
  type ApiKeyInfo,
  type ApiKeyRow as Row,
} from './api-key-rules.ts';
import { isBusy, type Schedule } from './busy.ts';
import type { Db } from './database.ts';

export {
  API_KEY_NAME_PATTERN,
  LAST_USED_RESOLUTION_MS,
  LAST_USED_RETRY_MS,
  type ApiKeyInfo,
} from './api-key-rules.ts';

export interface ApiKeyStoreOptions {
  /** For the retry of "last used" after SQLITE_BUSY; default setTimeout (unref'd: it keeps no process alive). */
  schedule?: Schedule;
  /** Where a "last used" write that failed for another reason than a lock is reported. Default: stderr. */
  log?: (line: string) => void;
}

/** API keys: only a hash of each is stored; the key itself is returned once, by create(). */
export class ApiKeyStore {
  readonly #clock: Clock;
  readonly #insert: Statement;
  readonly #byKeyId: Statement;
  readonly #byName: Statement;
  readonly #list: Statement;
  readonly #revoke: Statement;
  readonly #used: Statement;
  readonly #schedule: Schedule;
  readonly #log: (line: string) => void;
  /** "Last used" times not written yet, by key id: bookkeeping that waits while another process holds the lock. */
  readonly #pendingUsed = new Map<string, number>();
  #retryScheduled = false;

  constructor(db: Db, clock: Clock, options: ApiKeyStoreOptions = {}) {
    this.#clock = clock;
    this.#schedule = options.schedule ?? ((task, ms) => void setTimeout(task, ms).unref());
    this.#log = options.log ?? ((line) => void process.stderr.write(`${line}\n`));
    this.#insert = db.prepare(
      'INSERT INTO api_keys (name, key_id, secret_hash, created_at) VALUES (@name, @keyId, @hash, @now)',
    );
    this.#byKeyId = db.prepare('SELECT * FROM api_keys WHERE key_id = ?');
    this.#byName = db.prepare('SELECT * FROM api_keys WHERE name = ?');
    this.#list = db.prepare('SELECT * FROM api_keys ORDER BY created_at, name');
    this.#revoke = db.prepare(
      'UPDATE api_keys SET revoked_at = @now WHERE name = @name AND revoked_at IS NULL',
    );
    this.#used = db.prepare('UPDATE api_keys SET last_used_at = @now WHERE key_id = @keyId');
  }

  /** Make a key. The returned `key` is the only copy there will ever be. */
  create(name: string): { key: string; info: ApiKeyInfo } {
    checkApiKeyName(name);
    const fresh = generateApiKey();
    try {
      this.#insert.run({ name, keyId: fresh.keyId, hash: fresh.secretHash, now: this.#clock.now() });
    } catch (error) {
      // The UNIQUE constraint decides, so two processes creating the same name at once get the same answer.
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
        throw apiKeyNameTaken(name);
      }
      throw error;
    }
    return { key: fresh.key, info: toInfo(this.#byName.get(name) as Row) };
  }

  /**
   * Check a presented key. True only for a well-formed, known, unrevoked key; the same hash comparison runs
   * in every case so the answer's timing does not tell which.
   */
  verify(presented: string): boolean {
    return this.check(presented) !== undefined;
  }

  /** The name of the key, when verify() would accept it (for the audit trail's actor); the same work. */
  check(presented: string): string | undefined {
    const row = acceptedKey(presented, (keyId) => this.#byKeyId.get(keyId) as Row | undefined);
    if (row === undefined) return undefined;
    const now = this.#clock.now();
    if (lastUseDue(row.last_used_at, now)) {
      this.#pendingUsed.set(row.key_id, now);
      this.#writeUsed();
    }
    return row.name;
  }

  /**
   * Write the pending "last used" times. Bookkeeping, so it never fails or holds up the request that uses the
   * key: when another process holds the write lock the times stay pending and are tried again a second later
   * (and at the next use of a key); any other failure is logged and the time dropped.
   */
  #writeUsed(): void {
    for (const [keyId, now] of this.#pendingUsed) {
      try {
        this.#used.run({ keyId, now });
      } catch (error) {
        if (isBusy(error)) return this.#retryLater();
        this.#log(`api keys: cannot record when a key was last used: ${(error as Error).message}`);
      }
      this.#pendingUsed.delete(keyId);
    }
  }

  #retryLater(): void {
    if (this.#retryScheduled) return;
    this.#retryScheduled = true;
    this.#schedule(() => {
      this.#retryScheduled = false;
      this.#writeUsed();
    }, LAST_USED_RETRY_MS);
  }

  list(): ApiKeyInfo[] {
    return (this.#list.all() as Row[]).map(toInfo);
  }

  /** Revoke by name; effective for the next request. */
  revoke(name: string): ApiKeyInfo {
    const row = this.#byName.get(name) as Row | undefined;
    if (row === undefined) throw noSuchApiKey(name);
    this.#revoke.run({ name, now: this.#clock.now() });
    return toInfo(this.#byName.get(name) as Row);
  }
}
