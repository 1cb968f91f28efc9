/**
 * A reader of DER (X.690) for the tokens a client sends under Negotiate: the SPNEGO framing (spnego.ts) and
 * the Kerberos AP-REQ inside it (ap-req.ts). Pure; no I/O.
 *
 * Definite lengths only (DER; BER's indefinite form is refused), every length checked against the bytes that
 * hold it, each element read once: linear in the input. "Cut short" (TRUNCATED) is told apart from "wrong"
 * (MALFORMED), and neither is a crash.
 */

export const TokenErrorCodes = [
  /** No token at all. */
  'EMPTY',
  /** Longer than MAX_TOKEN_BASE64_CHARS. */
  'TOO_LONG',
  /** Not base64 (a character outside the alphabet, padding in the middle, a length not a multiple of 4). */
  'NOT_BASE64',
  /** A DER element is cut short, or a length runs past the end of what holds it. */
  'TRUNCATED',
  /** Bytes after the token's outer element: a length that says less than what was sent. */
  'TRAILING_BYTES',
  /** Indefinite length, a length of more than 4 bytes, or an element of the wrong type where one is required. */
  'MALFORMED',
  /** Well formed, but for a mechanism or in a form Doorman does not accept. */
  'UNSUPPORTED_MECHANISM',
  /** The first mechanism is Kerberos but the optimistic token is NTLMSSP: a client contradicting itself. */
  'MECHANISM_MISMATCH',
] as const;
export type TokenErrorCode = (typeof TokenErrorCodes)[number];

/** Why a token was refused. The helper answers BH with the message (Squid logs it in cache.log). */
export class TokenError extends Error {
  readonly code: TokenErrorCode;
  constructor(code: TokenErrorCode, message: string) {
    super(message);
    this.name = 'TokenError';
    this.code = code;
  }
}

export function hex(byte: number): string {
  return byte.toString(16).padStart(2, '0');
}

/** Up to 4 length bytes: 4 GiB, far past any token we take. */
const MAX_LENGTH_BYTES = 4;

/**
 * A cursor over one DER element's contents. `element` reads the next tag-length-value and checks its tag;
 * everything it returns is a view of the same buffer (no copies).
 */
export class DerReader {
  readonly #bytes: Buffer;
  readonly #what: string;
  #at = 0;

  constructor(bytes: Buffer, what: string) {
    this.#bytes = bytes;
    this.#what = what;
  }

  atEnd(): boolean {
    return this.#at >= this.#bytes.length;
  }

  peek(): number | undefined {
    return this.#bytes[this.#at];
  }

  /** Every byte of this element must have been read: a shorter inner length would hide bytes. */
  end(): void {
    if (!this.atEnd()) {
      throw new TokenError(
        'TRAILING_BYTES',
        `${this.#bytes.length - this.#at} unexpected bytes after the end of ${this.#what}`,
      );
    }
  }

  raw(length: number, what: string): Buffer {
    if (this.#bytes.length - this.#at < length) {
      throw new TokenError('TRUNCATED', `${what} is cut short in ${this.#what}`);
    }
    const out = this.#bytes.subarray(this.#at, this.#at + length);
    this.#at += length;
    return out;
  }

  element(tag: number, what: string): { content: Buffer; reader: DerReader } {
    const found = this.peek();
    if (found === undefined)
      throw new TokenError('TRUNCATED', `${what} is missing: ${this.#what} ends early`);
    if (found !== tag) {
      throw new TokenError('MALFORMED', `expected ${what} (tag 0x${hex(tag)}), found tag 0x${hex(found)}`);
    }
    this.#at++;
    const length = this.#length(what);
    const content = this.raw(length, what);
    return { content, reader: new DerReader(content, what) };
  }

  /** An INTEGER of 1 to 4 bytes, two's complement (X.690 §8.3): Kerberos' Int32 and its version numbers. */
  integer(what: string): number {
    const { content } = this.element(0x02, what);
    if (content.length === 0 || content.length > 4) {
      throw new TokenError('MALFORMED', `${what} is an INTEGER of ${content.length} bytes (1 to 4 allowed)`);
    }
    return content.readIntBE(0, content.length);
  }

  oid(what: string): string {
    const { content } = this.element(0x06, what);
    return decodeOid(content, what);
  }

  #length(what: string): number {
    const first = this.#bytes[this.#at++];
    if (first === undefined) throw new TokenError('TRUNCATED', `the length of ${what} is cut short`);
    if (first < 0x80) return first;
    if (first === 0x80) throw new TokenError('MALFORMED', `${what} has an indefinite length (not DER)`);
    const count = first & 0x7f;
    if (count > MAX_LENGTH_BYTES) {
      throw new TokenError(
        'MALFORMED',
        `the length of ${what} takes ${count} bytes (at most ${MAX_LENGTH_BYTES})`,
      );
    }
    const bytes = this.raw(count, `the length of ${what}`);
    let length = 0;
    for (const b of bytes) length = length * 256 + b;
    return length;
  }
}

/** X.690 §8.19: the first byte holds the first two arcs (40 × a + b), then base-128 arcs, high bit = more. */
function decodeOid(content: Buffer, what: string): string {
  if (content.length === 0) throw new TokenError('MALFORMED', `${what} is an empty OBJECT IDENTIFIER`);
  if (content.length > 64) {
    throw new TokenError(
      'MALFORMED',
      `${what} is an OBJECT IDENTIFIER of ${content.length} bytes (at most 64)`,
    );
  }
  const arcs: number[] = [];
  let value = 0;
  let pending = false;
  for (const b of content) {
    value = value * 128 + (b & 0x7f);
    pending = (b & 0x80) !== 0;
    if (!pending) {
      if (arcs.length === 0) {
        const top = value < 80 ? Math.floor(value / 40) : 2;
        arcs.push(top, value - top * 40);
      } else {
        arcs.push(value);
      }
      value = 0;
    }
  }
  if (pending) throw new TokenError('TRUNCATED', `${what}: the OBJECT IDENTIFIER's last arc is cut short`);
  return arcs.join('.');
}
