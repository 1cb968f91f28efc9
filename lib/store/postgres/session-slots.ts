import { StringArena } from './string-arena.ts';

/** Slots per page: pages are added, never reallocated. */
const PAGE_BITS = 16;
const PAGE_SLOTS = 1 << PAGE_BITS;
const IN_PAGE = PAGE_SLOTS - 1;

/**
 * A slot is 96 bytes of one page's buffer, read through three views: six float64s (null times as NaN), five
 * uint32s, then the key's and the user's UTF-8 bytes when both fit in 28 (an IPv4 address and a user of up to
 * 13 ASCII characters; longer ones go to the arena). One row side by side: a lookup reads the index and this
 * slot, two cache misses. (A typed array per column, then the strings in the arena, took twice the time per
 * lookup: a miss per field read, measured.)
 */
const SLOT_BYTES = 96;
const SLOT_F64 = SLOT_BYTES / 8;
const SLOT_U32 = SLOT_BYTES / 4;
export const ID = 0;
export const CHANGE = 1;
export const CREATED_AT = 2;
export const LAST_SEEN = 3;
export const EXPIRES_AT = 4;
export const IDLE_TIMEOUT = 5;
/** The key's hash, as indexed (to take it out of the index when the slot is freed). */
export const KEY_HASH = 12;
/** Where the key's bytes then the user's are in the arena, when not in the slot. */
const TEXT_REF = 13;
/** Key bytes | user bytes << 16 (a key is at most 64 characters, a user 1,024: schema.ts). */
const LENGTHS = 14;
const MAC_REF = 15;
/** Flags | the MAC's bytes << 8. */
export const FLAGS = 16;
const INLINE_AT = 68;
const INLINE_BYTES = SLOT_BYTES - INLINE_AT;

/** Flags: the key kind (0: a free slot), the source, whether there is a MAC, whether the text is in the slot. */
export const KIND = 3;
export const SOURCE_SHIFT = 2;
export const SOURCE_MASK = 7;
export const HAS_MAC = 32;
const INLINE = 64;
/** The slot holds a text (set by setText; 0 once released). */
const TEXT = 128;
/** What setFlags may set. */
const OWN_FLAGS = KIND | (SOURCE_MASK << SOURCE_SHIFT);

class Page {
  readonly f64: Float64Array;
  readonly u32: Uint32Array;
  readonly bytes: Buffer;
  constructor() {
    const buffer = new ArrayBuffer(PAGE_SLOTS * SLOT_BYTES);
    this.f64 = new Float64Array(buffer);
    this.u32 = new Uint32Array(buffer);
    this.bytes = Buffer.from(buffer);
  }
}

/**
 * The rows of a SessionTable, outside V8's heap: slots in pages, strings in the slot or in a StringArena, a
 * list of freed slots to reuse. Each slot's text is its key's bytes then its user's; its MAC, when it has one,
 * is in the arena. Pure bookkeeping: which row goes where, and which is newer, is the table's business.
 */
export class SessionSlots {
  readonly #pages: Page[] = [];
  /** Slots ever used; below it, a slot whose flags are 0 is on #free. */
  #end = 0;
  readonly #free: number[] = [];
  #strings = new StringArena();

  /** Slots ever used (a bound for a walk over them). */
  get end(): number {
    return this.#end;
  }

  allocate(): number {
    const reused = this.#free.pop();
    if (reused !== undefined) return reused;
    if (this.#end >>> PAGE_BITS === this.#pages.length) this.#pages.push(new Page());
    return this.#end++;
  }

  /** The slot is free again, its strings garbage. */
  release(slot: number): void {
    const flags = this.u32(slot, FLAGS);
    this.#freeText(slot, flags);
    if (flags & HAS_MAC) this.#strings.free(flags >>> 8);
    this.#setU32(slot, FLAGS, 0);
    this.#free.push(slot);
  }

  f64(slot: number, field: number): number {
    return (this.#pages[slot >>> PAGE_BITS] as Page).f64[(slot & IN_PAGE) * SLOT_F64 + field] as number;
  }

  setF64(slot: number, field: number, value: number): void {
    (this.#pages[slot >>> PAGE_BITS] as Page).f64[(slot & IN_PAGE) * SLOT_F64 + field] = value;
  }

  u32(slot: number, field: number): number {
    return (this.#pages[slot >>> PAGE_BITS] as Page).u32[(slot & IN_PAGE) * SLOT_U32 + field] as number;
  }

  /** The kind and source bits of a slot (its text and MAC flags are kept). */
  setFlags(slot: number, flags: number): void {
    this.#setU32(slot, FLAGS, (this.u32(slot, FLAGS) & ~OWN_FLAGS) | (flags & OWN_FLAGS));
  }

  setKeyHash(slot: number, hash: number): void {
    this.#setU32(slot, KEY_HASH, hash);
  }

  keyLength(slot: number): number {
    return this.u32(slot, LENGTHS) & 0xffff;
  }

  userLength(slot: number): number {
    return this.u32(slot, LENGTHS) >>> 16;
  }

  /** Whether the slot's text from `offset` is bytes[from..from + length). */
  textEquals(slot: number, offset: number, length: number, bytes: Uint8Array, from = 0): boolean {
    const page = this.#pages[slot >>> PAGE_BITS] as Page;
    const u = (slot & IN_PAGE) * SLOT_U32;
    if (((page.u32[u + FLAGS] as number) & INLINE) === 0)
      return this.#strings.equals((page.u32[u + TEXT_REF] as number) + offset, length, bytes, from);
    const own = page.bytes;
    const at = (slot & IN_PAGE) * SLOT_BYTES + INLINE_AT + offset;
    for (let i = 0; i < length; i++) if (own[at + i] !== bytes[from + i]) return false;
    return true;
  }

  /** The slot's text from `offset`, `length` bytes of it, as a string. */
  text(slot: number, offset: number, length: number): string {
    const page = this.#pages[slot >>> PAGE_BITS] as Page;
    const u = (slot & IN_PAGE) * SLOT_U32;
    if (((page.u32[u + FLAGS] as number) & INLINE) === 0)
      return this.#strings.text((page.u32[u + TEXT_REF] as number) + offset, length);
    const at = (slot & IN_PAGE) * SLOT_BYTES + INLINE_AT + offset;
    return page.bytes.toString('utf8', at, at + length);
  }

  key(slot: number): string {
    return this.text(slot, 0, this.keyLength(slot));
  }

  user(slot: number): string {
    const lengths = this.u32(slot, LENGTHS);
    return this.text(slot, lengths & 0xffff, lengths >>> 16);
  }

  /** The slot's text is now bytes[0..keyLength + userLength): the key's, then the user's. */
  setText(slot: number, bytes: Uint8Array, keyLength: number, userLength: number): void {
    const flags = this.u32(slot, FLAGS);
    this.#freeText(slot, flags);
    const length = keyLength + userLength;
    this.#setU32(slot, LENGTHS, keyLength | (userLength << 16));
    if (length <= INLINE_BYTES) {
      const page = this.#pages[slot >>> PAGE_BITS] as Page;
      const at = (slot & IN_PAGE) * SLOT_BYTES + INLINE_AT;
      for (let i = 0; i < length; i++) page.bytes[at + i] = bytes[i] as number;
      this.#setU32(slot, FLAGS, flags | TEXT | INLINE);
    } else {
      this.#setU32(slot, TEXT_REF, this.#strings.add(bytes, length));
      this.#setU32(slot, FLAGS, (flags | TEXT) & ~INLINE);
    }
  }

  mac(slot: number): string | undefined {
    const flags = this.u32(slot, FLAGS);
    return flags & HAS_MAC ? this.#strings.text(this.u32(slot, MAC_REF), flags >>> 8) : undefined;
  }

  /** The slot's MAC is now bytes[0..length), or none (undefined). */
  setMac(slot: number, bytes: Uint8Array | undefined, length: number): void {
    const flags = this.u32(slot, FLAGS);
    const held = flags & HAS_MAC ? flags >>> 8 : -1;
    if (
      bytes !== undefined &&
      held === length &&
      this.#strings.equals(this.u32(slot, MAC_REF), length, bytes)
    )
      return;
    if (held >= 0) this.#strings.free(held);
    if (bytes === undefined) {
      this.#setU32(slot, FLAGS, flags & 0xff & ~HAS_MAC);
      return;
    }
    this.#setU32(slot, MAC_REF, this.#strings.add(bytes, length));
    this.#setU32(slot, FLAGS, (flags & 0xff) | HAS_MAC | (length << 8));
  }

  /** Once the arena holds more garbage than strings: every string in use copied into a new one. */
  compactIfWorth(): void {
    if (!this.#strings.wantsCompaction()) return;
    const from = this.#strings;
    const to = new StringArena();
    for (let slot = 0; slot < this.#end; slot++) {
      const flags = this.u32(slot, FLAGS);
      if ((flags & (TEXT | INLINE)) === TEXT) {
        const lengths = this.u32(slot, LENGTHS);
        const length = (lengths & 0xffff) + (lengths >>> 16);
        this.#setU32(slot, TEXT_REF, to.copyFrom(from, this.u32(slot, TEXT_REF), length));
      }
      if (flags & HAS_MAC)
        this.#setU32(slot, MAC_REF, to.copyFrom(from, this.u32(slot, MAC_REF), flags >>> 8));
    }
    this.#strings = to;
  }

  /** The arena's bytes in use and garbage (for tests and the bench). */
  arena(): { live: number; garbage: number } {
    return { live: this.#strings.live, garbage: this.#strings.garbage };
  }

  /** The slot's text, if in the arena, is garbage now. */
  #freeText(slot: number, flags: number): void {
    if ((flags & (TEXT | INLINE)) !== TEXT) return;
    const lengths = this.u32(slot, LENGTHS);
    this.#strings.free((lengths & 0xffff) + (lengths >>> 16));
  }

  #setU32(slot: number, field: number, value: number): void {
    (this.#pages[slot >>> PAGE_BITS] as Page).u32[(slot & IN_PAGE) * SLOT_U32 + field] = value;
  }
}
