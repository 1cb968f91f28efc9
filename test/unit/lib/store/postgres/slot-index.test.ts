import { describe, expect, it } from 'vitest';
import { hashBytes, hashInteger, SlotIndex } from '../../../../../lib/store/postgres/slot-index.ts';

/** An index over slots whose "key" is a number in `keys`, hashed by `hash` (a bad one makes collisions). */
function indexOver(hash: (key: number) => number) {
  const keys: number[] = [];
  const index = new SlotIndex();
  return {
    index,
    add(key: number): number {
      const slot = keys.length;
      keys.push(key);
      index.insert(hash(key), slot);
      return slot;
    },
    find: (key: number) => index.find(hash(key), (slot) => keys[slot] === key),
    remove: (key: number, slot: number) => index.delete(hash(key), slot),
  };
}

describe('SlotIndex (open addressing, backward-shift deletion)', () => {
  it('finds every slot after growth far past its first 1,024 cells', () => {
    const t = indexOver(hashInteger);
    const slots = Array.from({ length: 50_000 }, (_, i) => t.add(i * 3 + 1));
    expect(t.index.size).toBe(50_000);
    slots.forEach((slot, i) => expect(t.find(i * 3 + 1)).toBe(slot));
    expect(t.find(2)).toBe(-1);
  });

  it('keeps every other entry findable when entries sharing one hash (and wrapping round the end) are deleted', () => {
    // Every key hashes to the last cell: one chain that wraps to the start of the cells.
    const t = indexOver(() => 1023);
    const slots = Array.from({ length: 200 }, (_, i) => t.add(i));
    for (let i = 0; i < 200; i += 3) expect(t.remove(i, slots[i] as number)).toBe(true);
    for (let i = 0; i < 200; i++) expect(t.find(i)).toBe(i % 3 === 0 ? -1 : slots[i]);
    expect(t.remove(0, slots[0] as number)).toBe(false);
    expect(t.index.size).toBe(200 - 67);
  });

  it('survives random inserts and deletes with few distinct hashes, as a Map does', () => {
    const t = indexOver((key) => key % 37);
    const model = new Map<number, number>();
    let seed = 7;
    const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % 3000;
    for (let step = 0; step < 20_000; step++) {
      const key = next();
      const held = model.get(key);
      if (held === undefined) model.set(key, t.add(key));
      else {
        expect(t.remove(key, held)).toBe(true);
        model.delete(key);
      }
    }
    for (let key = 0; key < 3000; key++) expect(t.find(key)).toBe(model.get(key) ?? -1);
    expect(t.index.size).toBe(model.size);
  });

  it('hashes ids past 2^32 and byte strings with their tag apart', () => {
    expect(hashInteger(2 ** 40 + 5)).not.toBe(hashInteger(5));
    const bytes = Buffer.from('10.0.0.1');
    expect(hashBytes(bytes, bytes.length, 1, 0)).not.toBe(hashBytes(bytes, bytes.length, 2, 0));
    expect(hashBytes(bytes, bytes.length, 1, 0)).not.toBe(hashBytes(bytes, bytes.length, 1, 1));
    expect(hashBytes(bytes, 7, 1, 0)).not.toBe(hashBytes(bytes, 8, 1, 0));
  });

  it("hashes bytes as HalfSipHash does (the reference's 32-bit vectors: key 0..7, input 0..n-1, 2 and 4 rounds)", () => {
    const input = Uint8Array.from({ length: 64 }, (_, i) => i);
    const vectors: Array<[number, number]> = [
      [0, 0x5b9f35a9],
      [1, 0xb85a4727],
      [3, 0x04e7fe8a],
      [4, 0x89466e2a],
      [7, 0xc563cf8b],
      [8, 0x8f84b8d0],
      [15, 0x972bfe74],
      [63, 0x744aea59],
    ];
    for (const [length, want] of vectors)
      expect(hashBytes(input, length, 0x03020100, 0x07060504, 2, 4) >>> 0).toBe(want);
  });
});
