import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API keys look like `dm.<key id>.<secret>`: the key id (72 random bits) finds the row, the secret
 * (256 random bits) is checked against its SHA-256 in constant time. A slow password hash buys nothing for
 * a 256-bit random secret; the hash only keeps a stolen DB from yielding working keys.
 */
const PREFIX = 'dm';
const KEY_PATTERN = /^dm\.([A-Za-z0-9_-]{12})\.([A-Za-z0-9_-]{43})$/;

export interface NewApiKey {
  /** The whole key, shown once. */
  key: string;
  keyId: string;
  secretHash: Buffer;
}

export function generateApiKey(): NewApiKey {
  const keyId = randomBytes(9).toString('base64url');
  const secret = randomBytes(32).toString('base64url');
  return { key: `${PREFIX}.${keyId}.${secret}`, keyId, secretHash: hashSecret(secret) };
}

export function parseApiKey(key: string): { keyId: string; secret: string } | undefined {
  const m = KEY_PATTERN.exec(key);
  return m ? { keyId: m[1] as string, secret: m[2] as string } : undefined;
}

export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** Constant-time comparison of a presented secret with a stored hash (both hashed to 32 bytes first). */
export function secretMatches(secret: string, storedHash: Buffer): boolean {
  const presented = hashSecret(secret);
  return storedHash.length === presented.length && timingSafeEqual(presented, storedHash);
}
