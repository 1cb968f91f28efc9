import { DoormanError, InvalidInputError, showValue } from '../errors.ts';
import { hashSecret, parseApiKey, secretMatches } from '../security/api-key.ts';

/**
 * What the API keys are whichever engine keeps them (lib/store/api-key-store.ts on SQLite,
 * lib/store/postgres/api-keys.ts on PostgreSQL): the name rule, the row as both tables hold it, and the check
 * of a presented key. Pure.
 */

export interface ApiKeyInfo {
  name: string;
  keyId: string;
  createdAt: number;
  lastUsedAt: number | undefined;
  revokedAt: number | undefined;
}

/** An api_keys row, as both engines return it. */
export interface ApiKeyRow {
  name: string;
  key_id: string;
  secret_hash: Buffer;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export const toApiKeyInfo = (r: ApiKeyRow): ApiKeyInfo => ({
  name: r.name,
  keyId: r.key_id,
  createdAt: r.created_at,
  lastUsedAt: r.last_used_at ?? undefined,
  revokedAt: r.revoked_at ?? undefined,
});

/** How stale `lastUsedAt` may be. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** After a failed "last used" write (the DB locked or away), it is tried again this much later. */
export const LAST_USED_RETRY_MS = 1000;

export const API_KEY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9 ._@-]{0,63}$/;

/** Refuse a name outside API_KEY_NAME_PATTERN (INVALID_INPUT naming the field). */
export function checkApiKeyName(name: string): void {
  if (!API_KEY_NAME_PATTERN.test(name)) {
    throw new InvalidInputError(
      'name',
      `${showValue(name)} is not allowed: 1-64 characters, letters, digits, space, ". _ @ -", starting with a letter or digit`,
    );
  }
}

export const apiKeyNameTaken = (name: string): DoormanError =>
  new DoormanError('CONFLICT', `name: an API key named ${showValue(name)} exists already`);

export const noSuchApiKey = (name: string): DoormanError =>
  new DoormanError('NOT_FOUND', `name: no API key named ${showValue(name)}`);

/** Compared against when the key is malformed or unknown, so every refusal costs the same work. */
const DUMMY_HASH = hashSecret('doorman-no-such-key');

/**
 * The row of a well-formed, known, unrevoked key, or undefined; the same hash comparison runs in every case
 * so the answer's timing does not tell which.
 */
export function acceptedKey<Row extends ApiKeyRow>(
  presented: string,
  byKeyId: (keyId: string) => Row | undefined,
): Row | undefined {
  const parsed = parseApiKey(presented);
  const row = parsed === undefined ? undefined : byKeyId(parsed.keyId);
  const matches = secretMatches(parsed?.secret ?? '', row?.secret_hash ?? DUMMY_HASH);
  return row === undefined || !matches || row.revoked_at !== null ? undefined : row;
}

/**
 * Whether a use at `now` is worth writing down: "last used" is kept to the minute, as a write per request
 * would double the login API's writes, and each one makes every session helper drop its cache.
 */
export const lastUseDue = (lastUsedAt: number | null, now: number): boolean =>
  lastUsedAt === null || now - lastUsedAt >= LAST_USED_RESOLUTION_MS;
