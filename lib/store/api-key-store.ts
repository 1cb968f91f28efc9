import type { Statement } from 'better-sqlite3';
import type { Clock } from '../clock.ts';
import { DoormanError, InvalidInputError, showValue } from '../errors.ts';
import { generateApiKey, hashSecret, parseApiKey, secretMatches } from '../security/api-key.ts';
import { isBusy, type Schedule } from './busy.ts';
import type { Db } from './database.ts';

export interface ApiKeyInfo {
  name: string;
  keyId: string;
  createdAt: number;
  lastUsedAt: number | undefined;
  revokedAt: number | undefined;
}

interface Row {
  name: string;
  key_id: string;
  secret_hash: Buffer;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

const toInfo = (r: Row): ApiKeyInfo => ({
  name: r.name,
  keyId: r.key_id,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at ?? undefined,
  revokedAt: r.revoked_at ?? undefined,
});

/** Compared against when the key is malformed or unknown, so every refusal costs the same work. */
const DUMMY_HASH = hashSecret('doorman-no-such-key');

/** How stale `lastUsedAt` may be. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** After SQLITE_BUSY, "last used" is tried again this much later (and on the next use of any key). */
export const LAST_USED_RETRY_MS = 1000;

export interface ApiKeyStoreOptions {
  /** For the retry of "last used" after SQLITE_BUSY; default setTimeout (unref'd: it keeps no process alive). */
  schedule?: Schedule;
  /** Where a "last used" write that failed for another reason than a lock is reported. Default: stderr. */
  log?: (line: string) => void;
}

export const API_KEY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9 ._@-]{0,63}$/;

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
    if (!API_KEY_NAME_PATTERN.test(name)) {
      throw new InvalidInputError(
        'name',
        `${showValue(name)} is not allowed: 1-64 characters, letters, digits, space, ". _ @ -", starting with a letter or digit`,
      );
    }
    const fresh = generateApiKey();
    try {
      this.#insert.run({ name, keyId: fresh.keyId, hash: fresh.secretHash, now: this.#clock.now() });
    } catch (error) {
      // The UNIQUE constraint decides, so two processes creating the same name at once get the same answer.
      if ((error as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
        throw new DoormanError('CONFLICT', `name: an API key named ${showValue(name)} exists already`);
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
    const parsed = parseApiKey(presented);
    const row = parsed === undefined ? undefined : (this.#byKeyId.get(parsed.keyId) as Row | undefined);
    const matches = secretMatches(parsed?.secret ?? '', row?.secret_hash ?? DUMMY_HASH);
    if (row === undefined || !matches || row.revoked_at !== null) return false;
    // "Last used" to the minute: a write per request would double the login API's writes, and each one makes
    // every session helper drop its cache.
    const now = this.#clock.now();
    if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_RESOLUTION_MS) {
      this.#pendingUsed.set(row.key_id, now);
      this.#writeUsed();
    }
    return true;
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
    if (row === undefined) throw new DoormanError('NOT_FOUND', `name: no API key named ${showValue(name)}`);
    this.#revoke.run({ name, now: this.#clock.now() });
    return toInfo(this.#byName.get(name) as Row);
  }
}
