import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { KeystrokeLine, promptHidden, readFirstLine } from '../../../cli/read-secret.ts';

describe('readFirstLine', () => {
  const read = (chunks: Array<string | Buffer>, max = 1024) => readFirstLine(Readable.from(chunks), max);

  it('reads up to the first LF, dropping a CR before it; the rest is not read', async () => {
    expect(await read(['pass word\nsecond line\n'])).toBe('pass word');
    expect(await read(['pass word\r\n'])).toBe('pass word');
    expect(await read(['no newline at all'])).toBe('no newline at all');
    expect(await read([])).toBe('');
  });

  it('joins a line split across chunks, even inside a UTF-8 character', async () => {
    const bytes = Buffer.from('pässwörd\n', 'utf8');
    const chunks = [...bytes].map((b) => Buffer.from([b]));
    expect(await read(chunks)).toBe('pässwörd');
  });

  it('refuses a line over the limit instead of cutting it', async () => {
    await expect(read(['x'.repeat(11)], 10)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(await read(['x'.repeat(10), '\n'], 10)).toBe('x'.repeat(10));
  });
});

describe('KeystrokeLine', () => {
  it('ends at Enter, with Backspace and Ctrl-U editing and control characters ignored', () => {
    const line = new KeystrokeLine(100);
    expect(line.push('pass')).toEqual({ done: false });
    expect(line.push('x\u007f')).toEqual({ done: false });
    expect(line.push('\u001b[Aword\r')).toEqual({ done: true, line: 'pass[Aword' });
    const cleared = new KeystrokeLine(100);
    expect(cleared.push('wrong\u0015right\n')).toEqual({ done: true, line: 'right' });
  });

  it('aborts on Ctrl-C; Ctrl-D ends an empty line only', () => {
    expect(new KeystrokeLine(100).push('abc\u0003')).toEqual({ aborted: true });
    expect(new KeystrokeLine(100).push('\u0004')).toEqual({ done: true, line: '' });
    expect(new KeystrokeLine(100).push('ab\u0004c\r')).toEqual({ done: true, line: 'abc' });
  });

  it('keeps at most maxChars characters', () => {
    expect(new KeystrokeLine(3).push('abcdef\r')).toEqual({ done: true, line: 'abc' });
  });
});

describe('promptHidden', () => {
  it('prompts, reads in raw mode without echo, and restores the terminal', async () => {
    const input = Object.assign(new PassThrough(), {
      isTTY: true,
      modes: [] as boolean[],
      setRawMode(mode: boolean) {
        this.modes.push(mode);
      },
    });
    const output = new PassThrough();
    const written: string[] = [];
    output.on('data', (chunk: Buffer) => written.push(chunk.toString()));
    const answer = promptHidden(input, output, 'Password: ', 100);
    input.write('sec');
    input.write('ret\r');
    expect(await answer).toBe('secret');
    expect(input.modes).toEqual([true, false]);
    expect(written.join('')).toBe('Password: \n');
  });

  it('Ctrl-C rejects, nothing typed is kept', async () => {
    const input = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => {} });
    const answer = promptHidden(input, new PassThrough(), 'Password: ', 100);
    input.write('abc\u0003');
    await expect(answer).rejects.toMatchObject({ code: 'INVALID_INPUT' });
  });
});
