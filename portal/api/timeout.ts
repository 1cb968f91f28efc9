import { showValue } from '../../lib/errors.ts';
import { MAX_SESSION_SECONDS } from '../../lib/config/schema.ts';

/**
 * The login API's `timeout`: the session's maximum lifetime, a whole number of seconds from 1 to one year,
 * written in plain decimal digits (no sign, point, exponent, leading zero or white space), so a script's
 * mistake such as "1.5", "-60", "1e3" or "60s" is refused rather than read as something it did not mean.
 */
const DIGITS = /^[1-9][0-9]{0,7}$/;

export type ParsedTimeout = { ok: true; seconds: number } | { ok: false; message: string };

export function parseTimeout(input: string): ParsedTimeout {
  if (DIGITS.test(input) && Number(input) <= MAX_SESSION_SECONDS) return { ok: true, seconds: Number(input) };
  return {
    ok: false,
    message: `${showValue(input)} is not allowed: a whole number of seconds from 1 to ${MAX_SESSION_SECONDS} (one year)`,
  };
}
