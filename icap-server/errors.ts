/**
 * What can be wrong with an ICAP request, each with a stable code and the ICAP status it is answered with.
 * Callers branch on `code`, never on `message`. Messages name the field and the bad value (quoted, bounded).
 *
 * "Need more bytes" is not an error: the parser says so with an event of its own. Every one of these ends the
 * connection after the answer, since the rest of the stream can no longer be framed (RFC 3507 §4.3.3 lists
 * the statuses; 413 is HTTP's, which ICAP's status codes follow).
 */
export const IcapErrorStatus = {
  /** Syntax: request line, header lines, Encapsulated, HTTP head, chunk framing. */
  MALFORMED: 400,
  /** RESPMOD and other methods this service does not offer. */
  METHOD_NOT_ALLOWED: 405,
  /** A method name ICAP does not define. */
  METHOD_NOT_IMPLEMENTED: 501,
  /** ICAP/1.1, ICAP/2.0, … */
  VERSION_NOT_SUPPORTED: 505,
  /** A header block, a header count, a chunk or a kept body over its cap. */
  TOO_LARGE: 413,
  /** A message's heads did not arrive within the header timeout, or its body stalled (the shell's timers). */
  TIMEOUT: 408,
  /** The stream ended inside a message (reported, never answered: nobody is left to read it). */
  TRUNCATED: 400,
} as const;
export type IcapErrorCode = keyof typeof IcapErrorStatus;

export class IcapProtocolError extends Error {
  readonly code: IcapErrorCode;
  /** The ICAP status this error is answered with. */
  readonly status: number;
  constructor(code: IcapErrorCode, message: string) {
    super(message);
    this.name = 'IcapProtocolError';
    this.code = code;
    this.status = IcapErrorStatus[code];
  }
}

/** Quote outside bytes for an error message: bounded, control characters made visible. */
export function show(value: string, max = 64): string {
  return JSON.stringify(value.length > max ? `${value.slice(0, max)}…` : value);
}
