import { describe, expect, it } from 'vitest';
import { escapeValue, unescapeField } from '../../../../lib/helper-protocol/escape.ts';
import { squidEscapeField, squidReadsValue } from './squid-model.ts';

/** The text LineDecoder hands over for raw (unescaped) bytes on the wire: one char per byte. */
const wire = (bytes: Buffer | string): string =>
  (typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes).toString('latin1');

/** Values that are hard to carry through Squid's reply parser. */
const TRICKY = [
  '',
  'alice',
  'John Doe',
  '  leading and trailing  ',
  'say "hi"',
  '"',
  'back\\slash',
  '\\"',
  '100%',
  '%',
  '%%',
  '%41',
  '%2',
  'a=b',
  'key=value other=x',
  'a+b',
  'ü',
  'Jürgen Müller',
  'Zoë "Z" O\'Brien',
  'DOMAIN\\jürgen',
  'user@EXAMPLE.ORG',
  '日本語の名前',
  '😀',
  'emoji 👩‍👩‍👧 family',
  'tab\there',
  'new\nline',
  'cr\rlf\r\n',
  '~._-',
  "!'()*",
  '<>#{}|^[]`',
  'a;b,c/d?e:f&g$h',
];

/** Deterministic pseudo-random strings mixing ASCII specials, escapes, Latin-1, BMP and astral characters. */
function* randomValues(count: number): Generator<string> {
  let seed = 0x2f6b3a1d;
  const next = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 0x1_0000_0000;
  };
  const pools = [' "\\%=+&', 'abcXYZ019', '%2%4%%41%zz', 'éüßñ', 'Ωжश中', '😀👍🏽🚀'];
  for (let i = 0; i < count; i++) {
    let s = '';
    const length = Math.floor(next() * 12);
    for (let j = 0; j < length; j++) {
      const pool = [...(pools[Math.floor(next() * pools.length)] as string)];
      s += pool[Math.floor(next() * pool.length)];
    }
    yield s;
  }
}

describe('unescapeField', () => {
  it('returns plain ASCII unchanged', () => {
    expect(unescapeField('10.0.0.5')).toBe('10.0.0.5');
    expect(unescapeField('aa:bb:cc:dd:ee:ff')).toBe('aa:bb:cc:dd:ee:ff');
    expect(unescapeField('-')).toBe('-');
    expect(unescapeField('')).toBe('');
  });

  it('decodes %20 and %2B, and leaves + alone (not form encoding)', () => {
    expect(unescapeField('John%20Doe')).toBe('John Doe');
    expect(unescapeField('a%2Bb')).toBe('a+b');
    expect(unescapeField('a+b')).toBe('a+b');
    expect(unescapeField('%25')).toBe('%');
    expect(unescapeField('%3a%3A')).toBe('::');
  });

  it('decodes UTF-8 multi-byte sequences, upper or lower case hex', () => {
    expect(unescapeField('caf%C3%A9')).toBe('café');
    expect(unescapeField('caf%c3%a9')).toBe('café');
    expect(unescapeField('%E6%97%A5%E6%9C%AC')).toBe('日本');
    expect(unescapeField('%F0%9F%98%80')).toBe('😀');
  });

  it('keeps a malformed %-escape literal, as Squid does', () => {
    expect(unescapeField('100%')).toBe('100%');
    expect(unescapeField('%')).toBe('%');
    expect(unescapeField('%4')).toBe('%4');
    expect(unescapeField('a%4')).toBe('a%4');
    expect(unescapeField('%zz')).toBe('%zz');
    expect(unescapeField('%G1%1G')).toBe('%G1%1G');
  });

  it('returns undefined when the decoded bytes are not UTF-8', () => {
    expect(unescapeField('%C3')).toBeUndefined();
    expect(unescapeField('caf%E9')).toBeUndefined();
    expect(unescapeField('%FF')).toBeUndefined();
    expect(unescapeField('%C3%28')).toBeUndefined();
    expect(unescapeField('%ED%A0%80')).toBeUndefined(); // an encoded UTF-16 surrogate
    expect(unescapeField('%C0%AF')).toBeUndefined(); // overlong encoding of "/"
  });

  it('reinterprets raw non-ASCII bytes from the decoder (latin1, one char per byte) as UTF-8', () => {
    expect(unescapeField(wire('café'))).toBe('café');
    expect(unescapeField(wire('😀'))).toBe('😀');
    expect(unescapeField(`${wire('Jürgen')}%20M%C3%BCller`)).toBe('Jürgen Müller');
    // A raw é split over an escaped and a raw byte still forms one character.
    expect(unescapeField(`caf%C3${wire(Buffer.from([0xa9]))}`)).toBe('café');
  });

  it('returns undefined for raw bytes that are not UTF-8 (a latin1 é)', () => {
    expect(unescapeField(wire(Buffer.from([0x63, 0x61, 0x66, 0xe9])))).toBeUndefined();
    expect(unescapeField(wire(Buffer.from([0x80])))).toBeUndefined();
  });

  it('reads back every field as Squid escapes it', () => {
    for (const value of [...TRICKY, ...randomValues(500)]) {
      expect(unescapeField(squidEscapeField(value)), JSON.stringify(value)).toBe(value);
    }
  });
});

describe('escapeValue', () => {
  it('passes unreserved characters as they are', () => {
    expect(escapeValue('alice')).toBe('alice');
    expect(escapeValue('A-Z_a.z~0-9')).toBe('A-Z_a.z~0-9');
  });

  it('escapes spaces, quotes, backslashes, %, = and non-ASCII as %XX of the UTF-8 bytes', () => {
    expect(escapeValue('John Doe')).toBe('John%20Doe');
    expect(escapeValue('"')).toBe('%22');
    expect(escapeValue('\\')).toBe('%5C');
    expect(escapeValue('%')).toBe('%25');
    expect(escapeValue('a=b')).toBe('a%3Db');
    expect(escapeValue('é')).toBe('%C3%A9');
    expect(escapeValue('😀')).toBe('%F0%9F%98%80');
    expect(escapeValue("!'()*")).toBe('%21%27%28%29%2A');
  });

  it('never emits a space, a quote, a backslash or anything outside [A-Za-z0-9-._~%]', () => {
    for (const value of [...TRICKY, ...randomValues(500)]) {
      const escaped = escapeValue(value);
      expect(escaped, JSON.stringify(value)).toMatch(/^[A-Za-z0-9\-._~%]*$/);
      expect(escaped).not.toMatch(/[ "\\]/);
      // Every % starts a complete escape, so Squid can never see "%%" or a malformed one.
      expect(escaped.replace(/%[0-9A-F]{2}/g, '')).not.toContain('%');
    }
  });

  it('round-trips the tricky values through Squid reading a reply (strwordtok + rfc1738_unescape)', () => {
    for (const value of TRICKY)
      expect(squidReadsValue(escapeValue(value)), JSON.stringify(value)).toBe(value);
  });

  it('round-trips random values through Squid reading a reply', () => {
    for (const value of randomValues(2000)) {
      expect(squidReadsValue(escapeValue(value)), JSON.stringify(value)).toBe(value);
    }
  });

  it('is undone by unescapeField', () => {
    for (const value of [...TRICKY, ...randomValues(500)])
      expect(unescapeField(escapeValue(value))).toBe(value);
  });

  it('the model is strict: unescaped values would not survive Squid', () => {
    // Guards the test itself: if the Squid model accepted anything, the round trips above would prove nothing.
    expect(squidReadsValue('John Doe')).toBe('John');
    expect(squidReadsValue('say"hi"')).toBe('sayhi');
    expect(squidReadsValue('100%25')).toBe('100%');
    expect(squidReadsValue('a%%b')).toBe('a%b');
  });
});
