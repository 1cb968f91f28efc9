/**
 * Why a fact the doctor reads (a command's output, an LDAP value, a DNS answer, a stat) could not be used. The
 * doctor turns it into a failed or skipped check with the message as its detail; it never crashes on it.
 */
export const FactErrorCodes = [
  /** Longer than the parser's cap: no real answer is that long. */
  'TOO_LARGE',
  /** Not in the shape the command or protocol gives. */
  'MALFORMED',
  /** The value is absent where one is required (an attribute the DC did not return). */
  'MISSING',
] as const;
export type FactErrorCode = (typeof FactErrorCodes)[number];

export class FactError extends Error {
  readonly code: FactErrorCode;
  /** What was being read: `klist`, `msDS-KeyVersionNumber`, `currentTime`, … */
  readonly field: string;
  constructor(code: FactErrorCode, field: string, message: string) {
    super(`${field}: ${message}`);
    this.name = 'FactError';
    this.code = code;
    this.field = field;
  }
}

/** Refuse `text` when longer than `max` characters, before anything scans it. */
export function capText(field: string, text: string, max: number): string {
  if (typeof text !== 'string') throw new FactError('MALFORMED', field, 'is not text');
  if (text.length > max) {
    throw new FactError('TOO_LARGE', field, `is ${text.length} characters long; at most ${max} are read`);
  }
  return text;
}
