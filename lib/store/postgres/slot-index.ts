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
 * A 32-bit hash of bytes[0..length) under a seed (FNV-1a from a seeded state, then murmur3's finaliser for
 * the low bits). The seed is the caller's secret when outsiders choose the bytes: without it they could pick,
 * offline, keys that all land on one cell (session-table.ts).
 */
export function hashBytes(bytes: Uint8Array, length: number, seed: number): number {
  let h = 0x811c9dc5 ^ seed;
  for (let i = 0; i < length; i++) h = Math.imul(h ^ (bytes[i] as number), 0x01000193);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) | 0;
}
