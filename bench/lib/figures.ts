/**
 * What the benchmarks' drivers share: the anchors' key scheme, a seeded random order, and percentiles.
 */

/**
 * The anchors kit's session keys: 10.a.b.c for index i (a = int(i/65536) % 256, b = int(i/256) % 256,
 * c = i % 256), so a million indexes stay distinct.
 */
export const benchKey = (i: number): string =>
  `10.${Math.floor(i / 65536) % 256}.${Math.floor(i / 256) % 256}.${i % 256}`;

/** The kit's user for index i: user%05d. */
export const benchUser = (i: number): string => `user${String(i).padStart(5, '0')}`;

/**
 * Who the login benches log in (--users): `same`, client i as user i (each login renews the session
 * make-sessions.ts preloaded on its address); `next`, client i as user i + p + 1 on the p-th pass over the
 * clients (each login takes its address from another user).
 */
export type LoginUsers = 'same' | 'next';
export const isLoginUsers = (value: unknown): value is LoginUsers => value === 'same' || value === 'next';

/** The user index of the n-th login, on client `client` of `clients`. */
export const loginUser = (users: LoginUsers, client: number, n: number, clients: number): number =>
  users === 'same' ? client : client + Math.floor(n / clients) + 1;

/** A xorshift generator in [0, 1): the same sequence for the same seed, in every run. */
export function seededRandom(seed = 42): () => number {
  let state = seed | 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 4294967296;
  };
}

/** 0..n-1 in a fixed random order (Fisher-Yates on seededRandom). */
export function shuffledIndexes(n: number, seed = 42): Uint32Array {
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  const rand = seededRandom(seed);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    const t = order[i] as number;
    order[i] = order[j] as number;
    order[j] = t;
  }
  return order;
}

export interface Spread {
  n: number;
  p50: number | null;
  p99: number | null;
  max: number | null;
}

/** p50, p99 and max of `values` (any unit; rounded to 0.01), null where there are none. */
export function spread(values: ArrayLike<number>): Spread {
  const sorted = Float64Array.from(values).sort();
  const n = sorted.length;
  const at = (q: number): number | null =>
    n === 0 ? null : Math.round((sorted[Math.min(n - 1, Math.floor(q * n))] as number) * 100) / 100;
  return { n, p50: at(0.5), p99: at(0.99), max: at(1) };
}
