/** Smallest number of cells (a power of two). */
const MIN_CELLS = 1024;

/**
 * A hash index from what a slot of a columnar table holds (a key, an id) to the slot: open addressing with
 * linear probing, kept at most 3/4 full, deletions by backward shift (no tombstones: churn never slows a
 * lookup down). A cell is two int32s: slot + 1 (0: empty) and the hash, so that a probe past another entry,
 * a deletion and a growth never read the table's rows (a cache miss each, most of a full load's time in the
 * index, measured). The index keeps no key of its own: the caller hashes and compares against its rows. 16
 * to 32 bytes a row, where a Map entry takes 30 to 60 without V8's pointer compression, beside the key's
 * string.
 */
export class SlotIndex {
  #cells = new Int32Array(MIN_CELLS * 2);
  #mask = MIN_CELLS - 1;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** The most cells a lookup of an indexed entry reads (its distance from its hash's cell, plus one). */
  longestProbe(): number {
    const cells = this.#cells;
    const mask = this.#mask;
    let longest = 0;
    for (let at = 0; at <= mask; at++) {
      if (cells[2 * at] === 0) continue;
      longest = Math.max(longest, ((at - ((cells[2 * at + 1] as number) & mask)) & mask) + 1);
    }
    return longest;
  }

  /** The slot whose hash is `hash` and that `matches`, or -1. */
  find(hash: number, matches: (slot: number) => boolean): number {
    const cells = this.#cells;
    const mask = this.#mask;
    for (let at = hash & mask; ; at = (at + 1) & mask) {
      const cell = cells[2 * at] as number;
      if (cell === 0) return -1;
      if (cells[2 * at + 1] === hash && matches(cell - 1)) return cell - 1;
    }
  }

  /** Index `slot` under `hash` (the caller knows it is not indexed yet). */
  insert(hash: number, slot: number): void {
    if ((this.#size + 1) * 4 > (this.#mask + 1) * 3) this.#resize((this.#mask + 1) * 2);
    this.#place(hash, slot);
    this.#size += 1;
  }

  /** Take `slot`, indexed under `hash`, out of the index. False if it was not there. */
  delete(hash: number, slot: number): boolean {
    const cells = this.#cells;
    const mask = this.#mask;
    let hole = hash & mask;
    for (; ; hole = (hole + 1) & mask) {
      const cell = cells[2 * hole] as number;
      if (cell === 0) return false;
      if (cell === slot + 1) break;
    }
    // Backward shift: every cell after the hole, up to the next empty one, that may live at the hole (its
    // home is not between the hole and where it stands) moves there and leaves a hole of its own.
    for (let at = (hole + 1) & mask; ; at = (at + 1) & mask) {
      const cell = cells[2 * at] as number;
      if (cell === 0) break;
      const hashed = cells[2 * at + 1] as number;
      if (((at - (hashed & mask)) & mask) >= ((at - hole) & mask)) {
        cells[2 * hole] = cell;
        cells[2 * hole + 1] = hashed;
        hole = at;
      }
    }
    cells[2 * hole] = 0;
    this.#size -= 1;
    return true;
  }

  #place(hash: number, slot: number): void {
    const cells = this.#cells;
    const mask = this.#mask;
    let at = hash & mask;
    while (cells[2 * at] !== 0) at = (at + 1) & mask;
    cells[2 * at] = slot + 1;
    cells[2 * at + 1] = hash;
  }

  #resize(length: number): void {
    const old = this.#cells;
    this.#cells = new Int32Array(length * 2);
    this.#mask = length - 1;
    for (let at = 0; at < old.length; at += 2) {
      const cell = old[at] as number;
      if (cell !== 0) this.#place(old[at + 1] as number, cell - 1);
    }
  }
}

/** A 32-bit hash of an integer up to 2^53 (a row id): its two halves mixed (murmur3's finaliser). */
export function hashInteger(value: number): number {
  let h = (value | 0) ^ Math.imul((value / 4294967296) | 0, 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) | 0;
}

/**
 * A 32-bit hash of bytes[0..length) under a 64-bit secret key (k0, k1): HalfSipHash-1-3, the keyed hash
 * Linux uses for its tables (hsiphash), written for 32-bit words. Keyed because outsiders choose the bytes
 * (session-table.ts): a hash anyone can compute, even seeded (FNV-1a from a seeded state was tried), lets
 * them look for keys that share a cell. `rounds` and `finalRounds` are for the reference's test vectors (2, 4).
 */
export function hashBytes(
  bytes: Uint8Array,
  length: number,
  k0: number,
  k1: number,
  rounds = 1,
  finalRounds = 3,
): number {
  let v0 = k0 | 0;
  let v1 = k1 | 0;
  let v2 = 0x6c796765 ^ k0;
  let v3 = 0x74656462 ^ k1;
  const whole = length & ~3;
  // One pass a word, one for the last (the bytes left and the length), then one with no word to finish.
  for (let i = 0; i <= whole + 4; i += 4) {
    let m = 0;
    let count = rounds;
    if (i < whole) {
      m =
        (bytes[i] as number) |
        ((bytes[i + 1] as number) << 8) |
        ((bytes[i + 2] as number) << 16) |
        ((bytes[i + 3] as number) << 24);
    } else if (i === whole) {
      m = length << 24;
      for (let j = length - 1; j >= whole; j--) m |= (bytes[j] as number) << ((j - whole) * 8);
    } else {
      v2 ^= 0xff;
      count = finalRounds;
    }
    v3 ^= m;
    for (; count > 0; count--) {
      v0 = (v0 + v1) | 0;
      v1 = ((v1 << 5) | (v1 >>> 27)) ^ v0;
      v0 = (v0 << 16) | (v0 >>> 16);
      v2 = (v2 + v3) | 0;
      v3 = ((v3 << 8) | (v3 >>> 24)) ^ v2;
      v0 = (v0 + v3) | 0;
      v3 = ((v3 << 7) | (v3 >>> 25)) ^ v0;
      v2 = (v2 + v1) | 0;
      v1 = ((v1 << 13) | (v1 >>> 19)) ^ v2;
      v2 = (v2 << 16) | (v2 >>> 16);
    }
    v0 ^= m;
  }
  return v1 ^ v3;
}
