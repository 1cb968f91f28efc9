import { describe, expect, it } from 'vitest';
import { parseTimeout } from '../../../portal/api/timeout.ts';

const refused = (input: string) => ({
  ok: false,
  message: `${JSON.stringify(input)} is not allowed: a whole number of seconds from 1 to 31536000 (one year)`,
});

describe('parseTimeout', () => {
  it('takes whole seconds from 1 to one year', () => {
    expect(parseTimeout('1')).toEqual({ ok: true, seconds: 1 });
    expect(parseTimeout('3600')).toEqual({ ok: true, seconds: 3600 });
    expect(parseTimeout('31536000')).toEqual({ ok: true, seconds: 31_536_000 });
  });

  it.each([
    ['empty', ''],
    ['zero', '0'],
    ['negative', '-60'],
    ['signed', '+60'],
    ['fractional', '1.5'],
    ['a whole number written with a point', '60.0'],
    ['exponent', '1e3'],
    ['hexadecimal', '0x10'],
    ['leading zero', '060'],
    ['a unit', '60s'],
    ['white space', ' 60'],
    ['trailing white space', '60 '],
    ['not a number', 'soon'],
    ['one second too many', '31536001'],
    ['far too big', '9'.repeat(400)],
    ['Infinity', 'Infinity'],
    ['non-ASCII digits', '٦٠'],
  ])('refuses %s, naming the value and what is allowed', (_, input) => {
    const result = parseTimeout(input);
    expect(result).toEqual(
      input.length > 64
        ? { ok: false, message: expect.stringMatching(/^"9{64}…" is not allowed: a whole number of seconds/) }
        : refused(input),
    );
  });
});
