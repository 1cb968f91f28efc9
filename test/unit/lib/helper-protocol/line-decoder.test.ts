import { describe, expect, it } from 'vitest';
import { LineDecoder } from '../../../../lib/helper-protocol/line-decoder.ts';
import type { Frame } from '../../../../lib/helper-protocol/line-decoder.ts';

/** A helper request line as Squid writes it (with concurrency=N): channel-ID, fields, LF. */
const request = (channel: number, ...fields: string[]): string => `${[channel, ...fields].join(' ')}\n`;

/** Feed the chunks one after the other into a fresh decoder; all frames, and the largest `buffered` seen. */
function decode(chunks: readonly Buffer[], maxLineBytes = 64): { frames: Frame[]; maxBuffered: number } {
  const decoder = new LineDecoder(maxLineBytes);
  const frames: Frame[] = [];
  let maxBuffered = 0;
  for (const chunk of chunks) {
    frames.push(...decoder.push(chunk));
    maxBuffered = Math.max(maxBuffered, decoder.buffered);
  }
  return { frames, maxBuffered };
}

/** The stream cut into pieces of `size` bytes. */
function chunksOf(stream: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < stream.length; i += size) out.push(stream.subarray(i, i + size));
  return out;
}

/** Every way of cutting the stream in two, plus: in three around every position. */
function* everySplit(stream: Buffer): Generator<Buffer[]> {
  for (let i = 0; i <= stream.length; i++) yield [stream.subarray(0, i), stream.subarray(i)];
  for (let i = 0; i < stream.length; i++) {
    for (let j = i; j <= stream.length; j++)
      yield [stream.subarray(0, i), stream.subarray(i, j), stream.subarray(j)];
  }
}

const line = (text: string): Frame => ({ kind: 'line', text });
const overlong = (head: string): Frame => ({ kind: 'overlong', head });

describe('framing', () => {
  const stream = Buffer.from(
    request(0, '10.0.0.5', 'aa:bb:cc:dd:ee:ff', '-') +
      request(1, '192.168.1.20', '-', '-') +
      '2 fe80::1 -\r\n' +
      '\n' +
      request(13, 'caf%C3%A9', '-'),
    'latin1',
  );
  const expected = [
    line('0 10.0.0.5 aa:bb:cc:dd:ee:ff -'),
    line('1 192.168.1.20 - -'),
    line('2 fe80::1 -'),
    line(''),
    line('13 caf%C3%A9 -'),
  ];

  it('decodes several lines given all at once', () => {
    expect(decode([stream]).frames).toEqual(expected);
  });

  it('gives the same frames in 1-byte chunks', () => {
    expect(decode(chunksOf(stream, 1)).frames).toEqual(expected);
  });

  it('gives the same frames for the stream split at every byte boundary (two and three pieces)', () => {
    let splits = 0;
    for (const chunks of everySplit(stream)) {
      expect(decode(chunks).frames, `split ${chunks.map((c) => c.length).join('+')}`).toEqual(expected);
      splits++;
    }
    expect(splits).toBeGreaterThan((stream.length * stream.length) / 2);
  });

  it('gives the same frames for every chunk size', () => {
    for (let size = 1; size <= stream.length; size++)
      expect(decode(chunksOf(stream, size)).frames).toEqual(expected);
  });

  it('returns nothing until the LF and holds the unfinished line back', () => {
    const decoder = new LineDecoder(64);
    expect(decoder.push(Buffer.from('7 10.0.0'))).toEqual([]);
    expect(decoder.buffered).toBe(8);
    expect(decoder.push(Buffer.from('.5 -'))).toEqual([]);
    expect(decoder.push(Buffer.from('\n8 10'))).toEqual([line('7 10.0.0.5 -')]);
    expect(decoder.buffered).toBe(4);
    expect(decoder.push(Buffer.alloc(0))).toEqual([]);
    expect(decoder.push(Buffer.from('\n'))).toEqual([line('8 10')]);
    expect(decoder.buffered).toBe(0);
  });
});

describe('CR and empty lines', () => {
  it('drops a CR just before the LF, also when the LF comes in the next chunk', () => {
    expect(decode([Buffer.from('1 a\r\n2 b\r\n')]).frames).toEqual([line('1 a'), line('2 b')]);
    expect(decode([Buffer.from('1 a\r'), Buffer.from('\n')]).frames).toEqual([line('1 a')]);
  });

  it('keeps a CR that is not just before the LF, and drops only one', () => {
    expect(decode([Buffer.from('1 a\rb\n')]).frames).toEqual([line('1 a\rb')]);
    expect(decode([Buffer.from('1 a\r\r\n')]).frames).toEqual([line('1 a\r')]);
  });

  it('yields empty lines as empty text (LF, CRLF, several in a row)', () => {
    expect(decode([Buffer.from('\n\r\n\n')]).frames).toEqual([line(''), line(''), line('')]);
  });

  it('passes stray non-ASCII bytes through one char per byte (latin1)', () => {
    const bytes = Buffer.from('1 café\n', 'utf8');
    const [frame] = decode(chunksOf(bytes, 1)).frames;
    expect(frame).toEqual(line(bytes.subarray(0, -1).toString('latin1')));
    expect(Buffer.from((frame as { text: string }).text, 'latin1')).toEqual(bytes.subarray(0, -1));
  });
});

describe('line length cap', () => {
  const CAP = 40;
  /** A request line of exactly `length` bytes (LF not counted), starting with the channel-ID. */
  const sized = (channel: number, length: number): string => {
    const prefix = `${channel} `;
    return prefix + 'x'.repeat(length - prefix.length);
  };

  it('passes a line of exactly the cap, with LF or CRLF', () => {
    const text = sized(3, CAP);
    expect(decode([Buffer.from(`${text}\n`)], CAP).frames).toEqual([line(text)]);
    expect(decode([Buffer.from(`${text}\r\n`)], CAP).frames).toEqual([line(text)]);
    expect(decode(chunksOf(Buffer.from(`${text}\r\n`), 1), CAP).frames).toEqual([line(text)]);
  });

  it('reports a line of cap+1 as overlong, its head holding the channel-ID', () => {
    for (const ending of ['\n', '\r\n']) {
      const { frames } = decode([Buffer.from(`${sized(42, CAP + 1)}${ending}`)], CAP);
      expect(frames).toHaveLength(1);
      expect(frames[0]?.kind).toBe('overlong');
      expect((frames[0] as { head: string }).head.startsWith('42 ')).toBe(true);
    }
  });

  it('recovers for the next line (one chunk)', () => {
    const stream = Buffer.from(`${sized(5, CAP + 1)}\n6 10.0.0.6 -\n`);
    const { frames } = decode([stream], CAP);
    expect(frames.map((f) => f.kind)).toEqual(['overlong', 'line']);
    expect(frames[1]).toEqual(line('6 10.0.0.6 -'));
  });

  it('gives the same frames for a stream with an overlong line split at every byte boundary', () => {
    const long = `${sized(5, CAP * 3)}\r\n`;
    const stream = Buffer.from(`4 10.0.0.4 -\n${long}6 10.0.0.6 -\n${sized(7, CAP)}\n`);
    const expected = [
      line('4 10.0.0.4 -'),
      overlong(long.slice(0, 32)),
      line('6 10.0.0.6 -'),
      line(sized(7, CAP)),
    ];
    expect(decode([stream], CAP).frames).toEqual(expected);
    for (const chunks of everySplit(stream)) {
      const { frames, maxBuffered } = decode(chunks, CAP);
      expect(frames).toEqual(expected);
      expect(maxBuffered).toBeLessThanOrEqual(CAP + 1);
    }
  });

  it('skips a huge line arriving across many chunks, keeping only the head, and recovers', () => {
    const decoder = new LineDecoder(CAP);
    const frames: Frame[] = [];
    frames.push(...decoder.push(Buffer.from('99 10.0.0.9 ')));
    for (let i = 0; i < 1000; i++) {
      frames.push(...decoder.push(Buffer.from('y'.repeat(100))));
      expect(decoder.buffered).toBeLessThanOrEqual(CAP + 1);
    }
    expect(frames).toEqual([]);
    frames.push(...decoder.push(Buffer.from('zzz\r\n100 10.0.0.10 -\n')));
    expect(frames).toHaveLength(2);
    expect(frames[0]?.kind).toBe('overlong');
    expect((frames[0] as { head: string }).head.startsWith('99 10.0.0.9 ')).toBe(true);
    expect((frames[0] as { head: string }).head.length).toBeLessThanOrEqual(CAP);
    expect(frames[1]).toEqual(line('100 10.0.0.10 -'));
    expect(decoder.buffered).toBe(0);
  });

  it('never buffers more than the cap + 1 (a CR may be pending)', () => {
    const stream = Buffer.from(
      `${sized(1, CAP)}\r\n${sized(2, CAP + 1)}\r\n${sized(3, CAP * 5)}\n${sized(4, CAP)}\r`,
    );
    for (let size = 1; size <= stream.length; size++) {
      expect(decode(chunksOf(stream, size), CAP).maxBuffered).toBeLessThanOrEqual(CAP + 1);
    }
    const decoder = new LineDecoder(CAP);
    decoder.push(Buffer.from(`${sized(4, CAP)}\r`));
    expect(decoder.buffered).toBe(CAP + 1);
    expect(decoder.push(Buffer.from('\n'))).toEqual([line(sized(4, CAP))]);
  });
});
