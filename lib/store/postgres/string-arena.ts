/** Bytes per page; a ref is page * PAGE_BYTES + offset (in a Uint32: 4,096 pages, 4 GB). */
const PAGE_BYTES = 1 << 20;
/** Below this much garbage, never worth a compaction. */
const MIN_GARBAGE = 4 << 20;

/**
 * Strings as UTF-8 bytes in pages of a megabyte outside V8's heap, each named by a ref and a byte length the
 * caller keeps (a columnar table's columns): a username of 9 ASCII characters costs 9 bytes here, where a V8
 * string costs 32 and a pointer to it 8 more. Pages are never reallocated (no copy of everything, no freed
 * half that malloc keeps); a string freed leaves garbage, counted, and the caller compacts (copies what lives
 * into a new arena) once the garbage outweighs what lives.
 */
export class StringArena {
  readonly #pages: Buffer[] = [];
  #page: Buffer | undefined;
  #used = PAGE_BYTES;
  #live = 0;
  #garbage = 0;

  /** Bytes held by strings still in use, and freed ones not yet compacted away. */
  get live(): number {
    return this.#live;
  }
  get garbage(): number {
    return this.#garbage;
  }

  /** Whether a compaction would return more than it costs. */
  wantsCompaction(): boolean {
    return this.#garbage > MIN_GARBAGE && this.#garbage > this.#live;
  }

  /** Keep bytes[0..length) (length ≤ PAGE_BYTES); its ref. */
  add(bytes: Uint8Array, length: number): number {
    if (this.#used + length > PAGE_BYTES || this.#page === undefined) {
      this.#page = Buffer.allocUnsafeSlow(PAGE_BYTES);
      this.#pages.push(this.#page);
      this.#used = 0;
    }
    const page = this.#page;
    const at = this.#used;
    for (let i = 0; i < length; i++) page[at + i] = bytes[i] as number;
    this.#used += length;
    this.#live += length;
    return (this.#pages.length - 1) * PAGE_BYTES + at;
  }

  /** Whether the string at `ref` of `length` bytes is bytes[from..from + length). */
  equals(ref: number, length: number, bytes: Uint8Array, from = 0): boolean {
    const page = this.#pages[Math.floor(ref / PAGE_BYTES)] as Buffer;
    const at = ref % PAGE_BYTES;
    for (let i = 0; i < length; i++) if (page[at + i] !== bytes[from + i]) return false;
    return true;
  }

  /** The string at `ref`. */
  text(ref: number, length: number): string {
    const at = ref % PAGE_BYTES;
    return (this.#pages[Math.floor(ref / PAGE_BYTES)] as Buffer).toString('utf8', at, at + length);
  }

  /** Copy the string at `ref` of another arena here (a compaction); its new ref. */
  copyFrom(from: StringArena, ref: number, length: number): number {
    const page = from.#pages[Math.floor(ref / PAGE_BYTES)] as Buffer;
    const at = ref % PAGE_BYTES;
    return this.add(page.subarray(at, at + length), length);
  }

  /** A string of `length` bytes is no longer used. */
  free(length: number): void {
    this.#live -= length;
    this.#garbage += length;
  }
}

/**
 * Bytes for strings on their way in or out of an arena (a key looked up, a row put): one buffer, grown to the
 * longest string seen, so that no lookup allocates. ASCII is copied by hand: shorter than a call into C++ for
 * the IP addresses and user names of every lookup.
 */
export class Scratch {
  bytes = Buffer.allocUnsafeSlow(256);

  /** Encode `text` as UTF-8 into `bytes` from `offset` (what is before it kept); its length in bytes. */
  encode(text: string, offset = 0): number {
    const length = text.length;
    // UTF-16 to UTF-8: at most 3 bytes for each unit
    if (offset + length * 3 > this.bytes.length) {
      const grown = Buffer.allocUnsafeSlow(offset + length * 3);
      this.bytes.copy(grown, 0, 0, offset);
      this.bytes = grown;
    }
    const bytes = this.bytes;
    for (let i = 0; i < length; i++) {
      const unit = text.charCodeAt(i);
      if (unit >= 0x80) return bytes.write(text, offset, 'utf8');
      bytes[offset + i] = unit;
    }
    return length;
  }
}
