import { showValue } from '../../errors.ts';
import { FactError } from './errors.ts';

/**
 * The domain controller's current key version of the proxy's computer account: the `msDS-KeyVersionNumber`
 * attribute of `(sAMAccountName=NAME$)`, as an LDAP client hands it over (ldapts gives `string | string[]`, or
 * Buffers for binary attributes). It is one unsigned 32-bit number in decimal (lab §6.5: `msDS-KeyVersionNumber: 2`
 * after a re-join). Absent means the bind account may not read it, or the computer object is not there.
 */
export const KEY_VERSION_ATTRIBUTE = 'msDS-KeyVersionNumber';

const DECIMAL = /^\d{1,10}$/;

export function parseKeyVersionNumber(value: unknown): number {
  const field = KEY_VERSION_ATTRIBUTE;
  let values: unknown[];
  if (value === undefined || value === null) values = [];
  else if (Array.isArray(value)) values = value;
  else values = [value];
  if (values.length === 0) {
    throw new FactError(
      'MISSING',
      field,
      'the domain controller returned no value: the computer account is missing, or the bind account may not read the attribute',
    );
  }
  if (values.length > 1) {
    throw new FactError('MALFORMED', field, `has ${values.length} values; a computer account has one`);
  }
  const only = values[0];
  let text: string;
  if (typeof only === 'string') text = only;
  else if (Buffer.isBuffer(only) && only.length <= 16) text = only.toString('latin1');
  else throw new FactError('MALFORMED', field, 'is not a decimal number');
  if (!DECIMAL.test(text) || Number(text) > 0xffffffff) {
    throw new FactError(
      'MALFORMED',
      field,
      `${showValue(text)} is not a key version (a decimal number of 32 bits)`,
    );
  }
  return Number(text);
}
