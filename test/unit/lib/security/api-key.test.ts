import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateApiKey, hashSecret, parseApiKey, secretMatches } from '../../../../lib/security/api-key.ts';

const KEY_FORMAT = /^dm\.([A-Za-z0-9_-]{12})\.([A-Za-z0-9_-]{43})$/;
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

describe('generateApiKey', () => {
  it('makes dm.<12-character key id>.<43-character secret>, base64url', () => {
    const { key, keyId } = generateApiKey();
    const m = KEY_FORMAT.exec(key);
    expect(m).not.toBeNull();
    expect(m?.[1]).toBe(keyId);
  });

  it('key id carries 72 random bits and the secret 256', () => {
    const { key, keyId } = generateApiKey();
    const secret = key.split('.')[2] as string;
    expect(Buffer.from(keyId, 'base64url')).toHaveLength(9);
    expect(Buffer.from(secret, 'base64url')).toHaveLength(32);
    // Round trip: the text is exactly the canonical encoding of those bytes, no padding, no stray characters.
    expect(Buffer.from(keyId, 'base64url').toString('base64url')).toBe(keyId);
    expect(Buffer.from(secret, 'base64url').toString('base64url')).toBe(secret);
  });

  it('stores the SHA-256 of the secret, not the secret', () => {
    const { key, secretHash } = generateApiKey();
    const secret = key.split('.')[2] as string;
    expect(secretHash).toEqual(sha256(secret));
    expect(secretHash.toString('latin1')).not.toContain(secret);
    expect(secretHash.includes(Buffer.from(secret, 'base64url'))).toBe(false);
  });

  it('never repeats a key id or a secret', () => {
    const keyIds = new Set<string>();
    const secrets = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const { key, keyId } = generateApiKey();
      keyIds.add(keyId);
      secrets.add(key.split('.')[2] as string);
    }
    expect(keyIds.size).toBe(2000);
    expect(secrets.size).toBe(2000);
  });

  it('uses the whole base64url alphabet (not, say, hex)', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) for (const c of generateApiKey().key.slice(3)) seen.add(c);
    seen.delete('.');
    // 200 keys × 55 characters: every one of the 64 symbols shows up with overwhelming probability.
    expect(seen.size).toBe(64);
  });
});

describe('parseApiKey', () => {
  it('splits a generated key into the id and the secret', () => {
    const { key, keyId } = generateApiKey();
    expect(parseApiKey(key)).toEqual({ keyId, secret: key.split('.')[2] });
  });

  const good = `dm.${'A'.repeat(12)}.${'b'.repeat(43)}`;
  it('accepts a key of the right shape', () => {
    expect(parseApiKey(good)).toEqual({ keyId: 'A'.repeat(12), secret: 'b'.repeat(43) });
  });

  it.each([
    ['empty', ''],
    ['wrong prefix', `dk.${'A'.repeat(12)}.${'b'.repeat(43)}`],
    ['upper-case prefix', `DM.${'A'.repeat(12)}.${'b'.repeat(43)}`],
    ['short key id', `dm.${'A'.repeat(11)}.${'b'.repeat(43)}`],
    ['long key id', `dm.${'A'.repeat(13)}.${'b'.repeat(43)}`],
    ['short secret', `dm.${'A'.repeat(12)}.${'b'.repeat(42)}`],
    ['long secret', `dm.${'A'.repeat(12)}.${'b'.repeat(44)}`],
    ['base64 "+" instead of base64url', `dm.${'A'.repeat(11)}+.${'b'.repeat(43)}`],
    ['base64 "/" in the secret', `dm.${'A'.repeat(12)}.${'b'.repeat(42)}/`],
    ['padding', `dm.${'A'.repeat(12)}.${'b'.repeat(42)}=`],
    ['trailing newline', `${good}\n`],
    ['leading space', ` ${good}`],
    ['Bearer prefix', `Bearer ${good}`],
    ['missing secret', `dm.${'A'.repeat(12)}`],
    ['extra part', `${good}.x`],
  ])('rejects %s', (_what, key) => {
    expect(parseApiKey(key)).toBeUndefined();
  });
});

describe('hashSecret / secretMatches', () => {
  it('hashSecret is SHA-256 of the UTF-8 text', () => {
    expect(hashSecret('abc').toString('hex')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
  });

  it('matches the secret that was hashed', () => {
    const { key, secretHash } = generateApiKey();
    expect(secretMatches(key.split('.')[2] as string, secretHash)).toBe(true);
  });

  it('does not match another secret, a prefix or the whole key', () => {
    const { key, secretHash } = generateApiKey();
    const secret = key.split('.')[2] as string;
    const flipped = `${secret.slice(0, -1)}${secret.endsWith('A') ? 'B' : 'A'}`;
    expect(secretMatches(flipped, secretHash)).toBe(false);
    expect(secretMatches(secret.slice(0, -1), secretHash)).toBe(false);
    expect(secretMatches(key, secretHash)).toBe(false);
    expect(secretMatches('', secretHash)).toBe(false);
  });

  it('returns false, without throwing, for a stored hash of the wrong length', () => {
    expect(secretMatches('x', Buffer.alloc(0))).toBe(false);
    expect(secretMatches('x', hashSecret('x').subarray(0, 31))).toBe(false);
    expect(secretMatches('x', Buffer.concat([hashSecret('x'), Buffer.alloc(1)]))).toBe(false);
  });
});
