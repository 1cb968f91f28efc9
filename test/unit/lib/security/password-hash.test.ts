import { scryptSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../../lib/errors.ts';
import {
  DEFAULT_SCRYPT,
  hashPassword,
  MAX_PASSWORD_BYTES,
  needsRehash,
  passwordProblem,
  verifyPassword,
} from '../../../../lib/security/password-hash.ts';

const FORMAT = /^scrypt\$(\d+)\$(\d+)\$(\d+)\$([A-Za-z0-9_-]{22})\$([A-Za-z0-9_-]{43})$/;

/** The parts of a stored hash; fails the test if it does not have the documented shape. */
function partsOf(stored: string) {
  const m = FORMAT.exec(stored);
  if (m === null) throw new Error(`not a stored hash: ${stored}`);
  return {
    N: Number(m[1]),
    r: Number(m[2]),
    p: Number(m[3]),
    salt: Buffer.from(m[4] as string, 'base64url'),
    hash: Buffer.from(m[5] as string, 'base64url'),
  };
}

describe('hashPassword', () => {
  it('stores scrypt$N$r$p$salt$hash with N of at least 2^15, a 16-byte salt and a 32-byte hash', async () => {
    const stored = await hashPassword('correct horse');
    const parts = partsOf(stored);
    expect(parts).toMatchObject({ N: 2 ** 15, r: 8, p: 1 });
    expect(parts.N).toBeGreaterThanOrEqual(2 ** 15);
    expect(parts.salt).toHaveLength(16);
    expect(parts.hash).toHaveLength(32);
    expect(stored).not.toContain('correct horse');
  });

  it('is plain scrypt (RFC 7914) of the UTF-8 password with the stored salt and parameters', async () => {
    const parts = partsOf(await hashPassword('pässword'));
    const expected = scryptSync(Buffer.from('pässword', 'utf8'), parts.salt, 32, {
      N: parts.N,
      r: parts.r,
      p: parts.p,
      maxmem: 64 * 1024 * 1024,
    });
    expect(parts.hash).toEqual(expected);
  });

  it('salts every hash: one password twice gives two different strings', async () => {
    const [a, b] = await Promise.all([hashPassword('same'), hashPassword('same')]);
    expect(a).not.toBe(b);
    expect(partsOf(a).salt).not.toEqual(partsOf(b).salt);
  });

  it('refuses an empty password and one over 1024 UTF-8 bytes, naming the field and not the value', async () => {
    for (const [password, message] of [
      ['', 'password: must not be empty'],
      ['x'.repeat(MAX_PASSWORD_BYTES + 1), 'password: must be at most 1024 bytes (UTF-8)'],
      ['é'.repeat(513), 'password: must be at most 1024 bytes (UTF-8)'], // 1026 bytes, 513 characters
    ] as const) {
      const error = await hashPassword(password).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(InvalidInputError);
      expect(error).toMatchObject({ code: 'INVALID_INPUT', field: 'password', message });
    }
    expect(passwordProblem('x'.repeat(MAX_PASSWORD_BYTES))).toBeUndefined();
    expect(passwordProblem('é'.repeat(512))).toBeUndefined();
  });

  it('refuses parameters weaker than 2^14 or a cost that is not a power of two', async () => {
    await expect(hashPassword('pw', { N: 2 ** 10, r: 8, p: 1 })).rejects.toThrow(RangeError);
    await expect(hashPassword('pw', { N: 3 * 2 ** 14, r: 8, p: 1 })).rejects.toThrow(RangeError);
    await expect(hashPassword('pw', { N: 2 ** 15, r: 0, p: 1 })).rejects.toThrow(RangeError);
  });
});

describe('verifyPassword', () => {
  it('accepts the password and nothing else', async () => {
    const stored = await hashPassword('correct horse');
    expect(await verifyPassword('correct horse', stored)).toBe(true);
    for (const wrong of ['correct hors', 'correct horse ', 'Correct horse', '', 'x'.repeat(2000)]) {
      expect(await verifyPassword(wrong, stored), wrong).toBe(false);
    }
  });

  it('treats composed and decomposed forms of the same characters as one password (NFC)', async () => {
    const stored = await hashPassword('caf\u00e9');
    expect(await verifyPassword('cafe\u0301', stored)).toBe(true);
  });

  it('verifies a hash made with other (stronger) parameters, read from the stored string', async () => {
    const strong = await hashPassword('pw', { N: 2 ** 15, r: 8, p: 2 });
    expect(partsOf(strong).p).toBe(2);
    expect(await verifyPassword('pw', strong)).toBe(true);
    expect(needsRehash(strong)).toBe(false);
  });

  it('answers false, without throwing, for a stored string it did not make or with absurd parameters', async () => {
    const good = await hashPassword('pw');
    const { salt, hash } = partsOf(good);
    const s = salt.toString('base64url');
    const h = hash.toString('base64url');
    for (const stored of [
      '',
      'pw',
      `bcrypt$15$8$1$${s}$${h}`,
      `scrypt$32768$8$1$${s}`,
      `scrypt$1073741824$8$1$${s}$${h}`, // 2^30: would allocate 1 TiB
      `scrypt$32769$8$1$${s}$${h}`,
      `scrypt$32768$999$1$${s}$${h}`,
      `scrypt$32768$8$0$${s}$${h}`,
      `${good}x`,
    ]) {
      expect(await verifyPassword('pw', stored), stored).toBe(false);
    }
  });

  it('needsRehash: true for weaker parameters than today and for what it cannot read', async () => {
    const { salt, hash } = partsOf(await hashPassword('pw'));
    const weak = `scrypt$16384$8$1$${salt.toString('base64url')}$${hash.toString('base64url')}`;
    expect(needsRehash(weak)).toBe(true);
    expect(needsRehash('garbage')).toBe(true);
    expect(needsRehash(await hashPassword('pw', DEFAULT_SCRYPT))).toBe(false);
  });
});
