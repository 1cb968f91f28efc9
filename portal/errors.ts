/**
 * What the API answers when it refuses a request. `error` is the stable code scripts branch on; `field` names
 * the form parameter at fault; `message` is for the human reading the script's output and never carries a
 * secret. A 500 is never built from these (its details stay in the log); a 503 is, because its reason (the
 * DB is busy or cannot be reached) is the operator's to act on and carries no secret.
 */
export const ApiErrorCodes = {
  invalid_request: 400,
  invalid_api_key: 401,
  forbidden: 403,
  /** From a trusted proxy without proof that the proxy wrote the client address (a CONNECT tunnel). */
  unproven_client: 403,
  not_found: 404,
  method_not_allowed: 405,
  payload_too_large: 413,
  unsupported_media_type: 415,
  too_many_requests: 429,
  service_unavailable: 503,
} as const;
export type ApiErrorCode = keyof typeof ApiErrorCodes;

export interface ApiErrorOptions {
  field?: string;
  headers?: Readonly<Record<string, string>>;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: ApiErrorCode;
  readonly field: string | undefined;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ApiErrorCode, message: string, options: ApiErrorOptions = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = ApiErrorCodes[code];
    this.field = options.field;
    this.headers = options.headers ?? {};
  }

  /** The response body: the same shape for every refusal. */
  toJSON(): { ok: false; error: ApiErrorCode; field?: string; message: string } {
    return this.field === undefined
      ? { ok: false, error: this.code, message: this.message }
      : { ok: false, error: this.code, field: this.field, message: this.message };
  }
}

/** A missing, repeated or unacceptable form parameter. */
export const invalidParam = (field: string, message: string): ApiError =>
  new ApiError('invalid_request', `${field}: ${message}`, { field });
