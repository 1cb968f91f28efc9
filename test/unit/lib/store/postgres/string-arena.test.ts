import { describe, expect, it } from 'vitest';
import { Scratch, StringArena } from '../../../../../lib/store/postgres/string-arena.ts';

const utf8 = (text: string) => Buffer.from(text, 'utf8');

describe('StringArena (UTF-8 strings in pages outside the heap)', () => {
  it('gives back what it kept, across page boundaries, and compares bytes', () => {
    const arena = new StringArena();
    const texts = Array.from({ length: 3000 }, (_, i) => `user-${i}-${'x'.repeat(i % 1024)}-é€😀`);
    const refs = texts.map((text) => {
      const bytes = utf8(text);
      return { ref: arena.add(bytes, bytes.length), length: bytes.length };
    });
    texts.forEach((text, i) => {
      const { ref, length } = refs[i] as { ref: number; length: number };
      expect(arena.text(ref, length)).toBe(text);
      expect(arena.equals(ref, length, utf8(text))).toBe(true);
      expect(arena.equals(ref, length, utf8(`${text.slice(0, -1)}!`))).toBe(false);
    });
    // more than a megabyte: several pages
    expect(arena.live).toBeGreaterThan(1 << 20);
    expect(arena.equals((refs[1] as { ref: number }).ref, 3, utf8('__use'), 2)).toBe(true);
  });

  it('counts freed bytes as garbage and wants a compaction only once it outweighs what lives', () => {
    const arena = new StringArena();
    const bytes = utf8('a'.repeat(1000));
    for (let i = 0; i < 6000; i++) arena.add(bytes, 1000);
    for (let i = 0; i < 2900; i++) arena.free(1000);
    expect(arena.wantsCompaction()).toBe(false);
    for (let i = 0; i < 200; i++) arena.free(1000);
    expect(arena.garbage).toBe(3_100_000);
    expect(arena.live).toBe(2_900_000);
    expect(arena.wantsCompaction()).toBe(false); // under 4 MB of garbage: not worth it
    const copy = new StringArena();
    const ref = copy.copyFrom(arena, 1000, 1000);
    expect(copy.text(ref, 1000)).toBe('a'.repeat(1000));
  });
});

describe('Scratch (encoding without allocating)', () => {
  it('encodes ASCII, then any UTF-8, after what it holds, growing when it must', () => {
    const scratch = new Scratch();
    const key = scratch.encode('10.0.0.1');
    expect(key).toBe(8);
    const long = `ü${'é'.repeat(400)}😀`;
    const user = scratch.encode(long, key);
    expect(user).toBe(utf8(long).length);
    expect(scratch.bytes.subarray(0, key).toString()).toBe('10.0.0.1');
    expect(scratch.bytes.subarray(key, key + user).toString()).toBe(long);
  });
});
