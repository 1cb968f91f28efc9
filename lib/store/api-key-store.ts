import type { Statement } from 'better-sqlite3';
import type { Clock } from '../clock.ts';
import { DoormanError, InvalidInputError, showValue } from '../errors.ts';
import { generateApiKey, hashSecret, parseApiKey, secretMatches } from '../security/api-key.ts';
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

  constructor(db: Db, clock: Clock) {
    this.#clock = clock;
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
      this.#used.run({ keyId: row.key_id, now });
    }
    return true;
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
