/**
 * Framing of Squid's helper channel: requests are lines ending in LF (a CR before it is dropped), and reads
 * cut them anywhere. Pure: bytes in, complete lines out, no I/O.
 *
 * A line longer than `maxLineBytes` is not buffered: its first bytes are kept (enough to find the
 * channel-ID, so the helper can still answer that request with BH) and the rest is skipped up to the LF.
 */
export type Frame = { kind: 'line'; text: string } | { kind: 'overlong'; head: string };

/** Kept of an overlong line: the channel-ID is at most a few digits at its start. */
const HEAD_BYTES = 32;

export class LineDecoder {
  readonly #max: number;
  #pending = '';
  #skipping: string | undefined;

  constructor(maxLineBytes: number) {
    this.#max = maxLineBytes;
  }

  /**
   * Feed bytes; returns the lines they complete. Squid escapes every field, so the stream is ASCII on the
   * wire; latin1 keeps any stray byte intact (one char per byte) for the field decoder to reinterpret.
   */
  push(chunk: Buffer): Frame[] {
    const text = chunk.toString('latin1');
    const frames: Frame[] = [];
    let start = 0;
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
      this.#complete(text.slice(start, nl), frames);
      start = nl + 1;
    }
    this.#accumulate(text.slice(start));
    return frames;
  }

  /** Bytes of an unfinished line held back (bounded by maxLineBytes). */
  get buffered(): number {
    return this.#pending.length;
  }

  #complete(piece: string, frames: Frame[]): void {
    if (this.#skipping !== undefined) {
      frames.push({ kind: 'overlong', head: this.#skipping });
      this.#skipping = undefined;
      return;
    }
    let line = this.#pending.length > 0 ? this.#pending + piece : piece;
    this.#pending = '';
    if (line.length > this.#max + 1) {
      frames.push({ kind: 'overlong', head: line.slice(0, HEAD_BYTES) });
      return;
    }
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (line.length > this.#max) frames.push({ kind: 'overlong', head: line.slice(0, HEAD_BYTES) });
    else frames.push({ kind: 'line', text: line });
  }

  #accumulate(rest: string): void {
    if (this.#skipping !== undefined || rest.length === 0) return;
    const pending = this.#pending + rest;
    // +1: a CR that turns out to precede the LF is not part of the line.
    if (pending.length > this.#max + 1) {
      this.#skipping = pending.slice(0, HEAD_BYTES);
      this.#pending = '';
    } else {
      this.#pending = pending;
    }
  }
}
