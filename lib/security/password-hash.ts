import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { InvalidInputError } from '../errors.ts';

/**
 * Admin passwords, hashed with scrypt (RFC 7914). The stored string carries its own parameters,
 * `scrypt$N$r$p$<salt>$<hash>` (salt and hash in base64url), so the cost can be raised later without
 * invalidating stored hashes. Unlike an API key, a password is chosen by a person and may be guessable: the
 * hash must be slow, and salted so two admins with one password do not share a hash.
 */
export interface ScryptParams {
  /** CPU/memory cost, a power of two. */
  N: number;
  r: number;
  p: number;
}

/** 2^15 × 8 × 128 bytes = 32 MiB and some 50-100 ms per hash: OWASP's minimum for scrypt. */
export const DEFAULT_SCRYPT: ScryptParams = { N: 2 ** 15, r: 8, p: 1 };

export const MAX_PASSWORD_BYTES = 1024;
const SALT_BYTES = 16;
const HASH_BYTES = 32;
/**
 * Bounds on what verify() accepts from a stored string: a corrupted or planted row must not make one sign-in
 * allocate gigabytes or spin for minutes.
 */
const LIMITS = { minN: 2 ** 14, maxN: 2 ** 20, maxR: 32, maxP: 16 } as const;
const FORMAT = /^scrypt\$(\d{1,8})\$(\d{1,3})\$(\d{1,3})\$([A-Za-z0-9_-]{22})\$([A-Za-z0-9_-]{43})$/;

/**
 * The password as hashed: NFC, so the same typed characters give the same bytes whatever the keyboard or
 * terminal composed (RFC 8265 OpaqueString). The length limit is on these UTF-8 bytes.
 */
function passwordBytes(password: string): Buffer {
  return Buffer.from(password.normalize('NFC'), 'utf8');
}

/** Why this password cannot be set, or undefined if it can. Never repeats the password. */
export function passwordProblem(password: string): string | undefined {
  if (password === '') return 'must not be empty';
  if (passwordBytes(password).length > MAX_PASSWORD_BYTES) {
    return `must be at most ${MAX_PASSWORD_BYTES} bytes (UTF-8)`;
  }
  return undefined;
}

export async function hashPassword(password: string, params: ScryptParams = DEFAULT_SCRYPT): Promise<string> {
  const problem = passwordProblem(password);
  if (problem !== undefined) throw new InvalidInputError('password', problem);
  checkParams(params);
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(passwordBytes(password), salt, params);
  return [
    'scrypt',
    params.N,
    params.r,
    params.p,
    salt.toString('base64url'),
    hash.toString('base64url'),
  ].join('$');
}

/**
 * Does `password` match `stored`? Compared in constant time. False, never an exception, for a password that
 * could not have been set (empty, too long) and for a stored string that is not a hash this code made.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parseStored(stored);
  if (parsed === undefined || passwordProblem(password) !== undefined) return false;
  const hash = await derive(passwordBytes(password), parsed.salt, parsed.params);
  return timingSafeEqual(hash, parsed.hash);
}

/** True when `stored` was made with weaker parameters than the current defaults (rehash at next sign-in). */
export function needsRehash(stored: string): boolean {
  const parsed = parseStored(stored);
  return (
    parsed === undefined ||
    parsed.params.N < DEFAULT_SCRYPT.N ||
    parsed.params.r < DEFAULT_SCRYPT.r ||
    parsed.params.p < DEFAULT_SCRYPT.p
  );
}

function parseStored(stored: string): { params: ScryptParams; salt: Buffer; hash: Buffer } | undefined {
  const m = FORMAT.exec(stored);
  if (m === null) return undefined;
  const params = { N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) };
  if (paramsProblem(params) !== undefined) return undefined;
  return {
    params,
    salt: Buffer.from(m[4] as string, 'base64url'),
    hash: Buffer.from(m[5] as string, 'base64url'),
  };
}

function paramsProblem({ N, r, p }: ScryptParams): string | undefined {
  const powerOfTwo = Number.isInteger(N) && N > 1 && (N & (N - 1)) === 0;
  if (!powerOfTwo || N < LIMITS.minN || N > LIMITS.maxN) return `N=${N}: a power of two from 2^14 to 2^20`;
  if (!Number.isInteger(r) || r < 1 || r > LIMITS.maxR) return `r=${r}: 1 to ${LIMITS.maxR}`;
  if (!Number.isInteger(p) || p < 1 || p > LIMITS.maxP) return `p=${p}: 1 to ${LIMITS.maxP}`;
  return undefined;
}

function checkParams(params: ScryptParams): void {
  const problem = paramsProblem(params);
  if (problem !== undefined) throw new RangeError(`scrypt parameters out of range: ${problem}`);
}

function derive(password: Buffer, salt: Buffer, { N, r, p }: ScryptParams): Promise<Buffer> {
  // Node refuses to use more than maxmem (32 MiB by default), which 128·N·r reaches exactly at our default.
  const options: ScryptOptions = { N, r, p, maxmem: 256 * N * r + 1024 * 1024 };
  return new Promise((resolve, reject) => {
    scrypt(password, salt, HASH_BYTES, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}
