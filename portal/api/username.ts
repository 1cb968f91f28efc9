import { showValue } from '../../lib/errors.ts';

/**
 * A username as the API accepts it: surrounding white space trimmed, then 1-256 characters (code points, so a
 * name in any script gets the same room) with no control characters. Line and paragraph separators count as
 * control characters: Squid's helper protocol and every log are line-based.
 */
export const MAX_USERNAME_LENGTH = 256;

const FORBIDDEN = /[\p{Cc}\u2028\u2029]/u;

export type ParsedUsername = { ok: true; username: string } | { ok: false; message: string };

export function parseUsername(input: string): ParsedUsername {
  const username = input.trim();
  const length = [...username].length;
  if (length >= 1 && length <= MAX_USERNAME_LENGTH && !FORBIDDEN.test(username))
    return { ok: true, username };
  return {
    ok: false,
    message: `${showValue(input)} is not allowed: 1-${MAX_USERNAME_LENGTH} characters after trimming white space, no control characters`,
  };
}
