/**
 * Bytes received and not yet parsed, in one growable buffer: appending a read costs a copy of that read only
 * (amortised), so a message fed one byte at a time is not copied once per byte. Pure, no I/O.
 */
const SMALL = 4096;

export class ByteQueue {
  #buf = Buffer.allocUnsafe(SMALL);
  #start = 0;
  #end = 0;

  get length(): number {
    return this.#end - this.#start;
  }

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    if (this.#end + chunk.length > this.#buf.length) {
      const live = this.length;
      const needed = live + chunk.length;
      if (needed <= this.#buf.length / 2) {
        // Enough room once the consumed bytes are dropped: slide the live ones to the front.
        this.#buf.copy(this.#buf, 0, this.#start, this.#end);
      } else {
        const bigger = Buffer.allocUnsafe(Math.max(needed, this.#buf.length * 2));
        this.#buf.copy(bigger, 0, this.#start, this.#end);
        this.#buf = bigger;
      }
      this.#start = 0;
      this.#end = live;
    }
    this.#buf.set(chunk, this.#end);
    this.#end += chunk.length;
  }

  /** Position of `needle` at or after `from` (relative to the first unread byte), or -1. */
  indexOf(needle: string, from = 0): number {
    const at = this.#buf.subarray(this.#start, this.#end).indexOf(needle, Math.max(0, from), 'latin1');
    return at;
  }

  /** The first `n` bytes as text (latin1: one char per byte), without consuming them. */
  text(n: number): string {
    return this.#buf.toString('latin1', this.#start, this.#start + n);
  }

  /** Consume `n` bytes and return a copy of them (the queue's memory is reused). */
  take(n: number): Buffer {
    const out = Buffer.from(this.#buf.subarray(this.#start, this.#start + n));
    this.skip(n);
    return out;
  }

  skip(n: number): void {
    this.#start += n;
    if (this.#start >= this.#end) {
      this.#start = 0;
      this.#end = 0;
      // One large read must not pin a large buffer for the rest of a long-lived connection.
      if (this.#buf.length > 16 * SMALL) this.#buf = Buffer.allocUnsafe(SMALL);
    }
  }
}
