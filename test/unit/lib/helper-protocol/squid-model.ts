/**
 * Squid's side of the helper channel, re-implemented from its sources for the tests: how it escapes request
 * fields (lib/rfc1738.c rfc1738_escape) and how it reads a reply line (src/helper/Reply.cc parse and
 * parseResponseKeys, lib/rfc1738.c rfc1738_unescape, src/String.cc strwordtok). Works on bytes, as Squid does.
 * Not a test file: the *.test.ts files import it.
 */

/** rfc1738_escape = UNSAFE | CTRLS: controls, DEL and non-ASCII bytes, and the RFC 1738 unsafe characters. */
const UNSAFE = new Set([...'<>"#%{}|\\^~[]`\' '].map((c) => c.charCodeAt(0)));

/** A request field as Squid sends it: UTF-8 bytes, unsafe ones as %XX. */
export function squidEscapeField(value: string): string {
  let out = '';
  for (const b of Buffer.from(value, 'utf8')) {
    out +=
      b < 0x20 || b >= 0x7f || UNSAFE.has(b)
        ? `%${b.toString(16).toUpperCase().padStart(2, '0')}`
        : String.fromCharCode(b);
  }
  return out;
}

const fromHex = (b: number | undefined): number => {
  if (b === undefined) return -1;
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x41 && b <= 0x46) return b - 0x41 + 10;
  if (b >= 0x61 && b <= 0x66) return b - 0x61 + 10;
  return -1;
};

/** rfc1738_unescape: %XX decoded unless it is %00; "%%" is one "%"; a malformed escape stays literal. */
export function rfc1738Unescape(bytes: readonly number[]): number[] {
  const out: number[] = [];
  for (let j = 0; j < bytes.length; j++) {
    let c = bytes[j] as number;
    if (c === 0x25) {
      if (bytes[j + 1] === 0x25) {
        j++;
      } else {
        const v1 = fromHex(bytes[j + 1]);
        const v2 = fromHex(bytes[j + 2]);
        const x = (v1 << 4) | v2;
        if (v1 >= 0 && v2 >= 0 && x > 0) {
          c = x;
          j += 2;
        }
      }
    }
    out.push(c);
  }
  return out;
}

const isSpace = (b: number | undefined): boolean =>
  b !== undefined && (b === 0x20 || (b >= 0x09 && b <= 0x0d));

/**
 * strwordtok: one word from `start`, '"' toggles quoting, a backslash escapes only inside quotes (\n, \r, or
 * the next byte), an unquoted space ends the word (and is consumed). Returns the word (undefined when only
 * space remained) and where reading stopped.
 */
export function strwordtok(
  bytes: readonly number[],
  start: number,
): { word: number[] | undefined; end: number } {
  let p = start;
  while (p < bytes.length && isSpace(bytes[p])) p++;
  if (p >= bytes.length) return { word: undefined, end: p };
  const word: number[] = [];
  let quoted = false;
  while (p < bytes.length) {
    const ch = bytes[p] as number;
    if (ch === 0x5c) {
      if (quoted) p++;
      if (p >= bytes.length) break;
      const next = bytes[p] as number;
      word.push(next === 0x6e ? 0x0a : next === 0x72 ? 0x0d : next);
      p++;
    } else if (ch === 0x22) {
      quoted = !quoted;
      p++;
    } else if (!quoted && isSpace(ch)) {
      p++;
      break;
    } else {
      word.push(ch);
      p++;
    }
  }
  return { word, end: p };
}

const isKeyNameChar = (b: number | undefined): boolean =>
  b !== undefined &&
  ((b >= 0x61 && b <= 0x7a) ||
    (b >= 0x41 && b <= 0x5a) ||
    (b >= 0x30 && b <= 0x39) ||
    b === 0x2d ||
    b === 0x5f);

export interface SquidReadReply {
  channel: string | undefined;
  result: 'OK' | 'ERR' | 'BH' | 'Unknown';
  /** kv-pairs as Squid stores them (values as UTF-8 text; undefined when the bytes are not UTF-8). */
  notes: Array<[string, string | undefined]>;
  /** What was left that Squid did not take as kv-pairs. */
  rest: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const text = (bytes: readonly number[]): string | undefined => {
  try {
    return utf8.decode(Uint8Array.from(bytes));
  } catch {
    return undefined;
  }
};

/** Squid reading one reply line (LF included or not), as UTF-8 bytes written to the helper's stdout. */
export function squidReadsReply(line: string, channelIds: boolean): SquidReadReply {
  const bytes = [...Buffer.from(line.endsWith('\n') ? line.slice(0, -1) : line, 'utf8')];
  let p = 0;
  let channel: string | undefined;
  if (channelIds) {
    const m = /^(\d+) /.exec(Buffer.from(bytes).toString('latin1'));
    if (m) {
      channel = m[1];
      p = m[0].length;
    }
  }
  let result: SquidReadReply['result'] = 'Unknown';
  for (const r of ['OK', 'ERR', 'BH'] as const) {
    const token = [...Buffer.from(r)];
    const matches = token.every((b, i) => bytes[p + i] === b);
    const after = bytes[p + token.length];
    if (matches && (after === undefined || after === 0x20)) {
      result = r;
      p += token.length;
      break;
    }
  }
  while (isSpace(bytes[p])) p++;
  const notes: SquidReadReply['notes'] = [];
  // parseResponseKeys
  while (p < bytes.length) {
    let q = p;
    while (q < bytes.length && isKeyNameChar(bytes[q])) q++;
    if (bytes[q] !== 0x3d || isSpace(bytes[q + 1])) break;
    const key = Buffer.from(bytes.slice(p, q)).toString('latin1');
    const valueStart = q + 1;
    const urlDecode = bytes[valueStart] !== 0x22;
    const { word, end } = strwordtok(bytes, valueStart);
    const value = word !== undefined && urlDecode && end - valueStart > 2 ? rfc1738Unescape(word) : word;
    notes.push([key, value === undefined ? '' : text(value)]);
    p = end;
    while (isSpace(bytes[p])) p++;
  }
  return { channel, result, notes, rest: Buffer.from(bytes.slice(p)).toString('utf8') };
}

/** The value Squid gets for `user=` after reading `value` escaped as a reply would carry it. */
export function squidReadsValue(escaped: string): string | undefined {
  const { notes } = squidReadsReply(`OK user=${escaped}`, false);
  return notes.length === 1 && notes[0]?.[0] === 'user' ? notes[0][1] : undefined;
}
