/**
 * Typed errors with stable string codes. Callers branch on `code`, never on `message`.
 * Messages name the field and the bad value, and never carry a secret.
 */
export const ErrorCodes = [
  'CONFIG_INVALID',
  'CONFIG_UNREADABLE',
  'INVALID_INPUT',
  'STORE_UNAVAILABLE',
  'SCHEMA_TOO_NEW',
  'NOT_FOUND',
  'CONFLICT',
  'PRIVILEGES',
  /** A path root would act in is not root's alone (a link, another owner, writable by others). */
  'UNSAFE_PATH',
  /** A file or input over its size cap. */
  'TOO_LARGE',
  /** Another process did not do what was asked of it in time (authd stopping, restarting, answering). */
  'TIMEOUT',
] as const;
export type ErrorCode = (typeof ErrorCodes)[number];

export class DoormanError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DoormanError';
    this.code = code;
  }
}

/** A bad value for a named field: the message says which field, what was given and what is allowed. */
export class InvalidInputError extends DoormanError {
  readonly field: string;
  constructor(field: string, message: string) {
    super('INVALID_INPUT', `${field}: ${message}`);
    this.name = 'InvalidInputError';
    this.field = field;
  }
}

/** Quote a user-supplied value for an error message: bounded, control characters made visible. */
export function showValue(value: string, max = 64): string {
  const cut = value.length > max ? `${value.slice(0, max)}…` : value;
  return JSON.stringify(cut);
}
