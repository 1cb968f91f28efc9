import { describe, expect, it } from 'vitest';
import { thrownOf } from '../../../../support/thrown.ts';
import { FactError } from '../../../../../lib/seamless/doctor/errors.ts';
import { parseKeyVersionNumber } from '../../../../../lib/seamless/doctor/key-version.ts';

const refusal = (value: unknown): FactError => thrownOf(FactError, () => parseKeyVersionNumber(value));

describe('parseKeyVersionNumber', () => {
  it("reads the DC's msDS-KeyVersionNumber as ldapts gives it (lab: 1, then 2 after a re-join)", () => {
    expect(parseKeyVersionNumber('1')).toBe(1);
    expect(parseKeyVersionNumber(['2'])).toBe(2);
    expect(parseKeyVersionNumber(Buffer.from('4294967295'))).toBe(4294967295);
  });

  it('says the value is missing, with the likely causes', () => {
    for (const value of [undefined, null, []]) {
      const error = refusal(value);
      expect({ code: error.code, message: error.message }).toEqual({
        code: 'MISSING',
        message:
          'msDS-KeyVersionNumber: the domain controller returned no value: the computer account is missing, or the bind account may not read the attribute',
      });
    }
  });

  it('refuses anything but one decimal number of 32 bits, naming the value', () => {
    expect(refusal(['1', '2']).message).toBe(
      'msDS-KeyVersionNumber: has 2 values; a computer account has one',
    );
    expect(refusal('-1').message).toBe(
      'msDS-KeyVersionNumber: "-1" is not a key version (a decimal number of 32 bits)',
    );
    for (const value of [
      '',
      ' 1',
      '1.0',
      '0x10',
      '4294967296',
      '12345678901',
      7,
      {},
      Buffer.alloc(17, 0x31),
    ]) {
      expect(refusal(value).code).toBe('MALFORMED');
    }
  });
});
