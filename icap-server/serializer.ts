import { STATUS_CODES } from 'node:http';
import { isToken } from './fields.ts';

/**
 * ICAP responses (RFC 3507 §4.3.3, §4.6, §4.8.2, §4.10.2), as bytes. Pure: the caller supplies the ISTag and
 * the time. Every response carries ISTag ("MUST be included in every ICAP response", §4.7), Date, and an
 * Encapsulated header ("MUST be included in every ICAP message", §4.4.1: null-body=0 when nothing follows).
 *
 *   Status-Line = ICAP-Version SP Status-Code SP Reason-Phrase CRLF
 *   ISTag       = "ISTag:" quoted-string                      ; at most 32 characters inside the quotes
 *
 * Values we put in a header come from our own code (the decision, the ISTag source); one with a CR or LF in it
 * is our bug, and throws a TypeError rather than letting a decision write a header of its choosing.
 */
export interface Stamp {
  /** The service's current ISTag, unquoted (it changes whenever the answers may change). */
  istag: string;
  /** Milliseconds since the epoch, for the Date header. */
  now: number;
}

const ICAP_REASONS: Readonly<Record<number, string>> = {
  100: 'Continue',
  200: 'OK',
  204: 'No Content',
  400: 'Bad Request',
  404: 'ICAP Service Not Found',
  405: 'Method Not Allowed For Service',
  408: 'Request Timeout',
  413: 'Request Entity Too Large',
  500: 'Server Error',
  501: 'Method Not Implemented',
  503: 'Service Overloaded',
  505: 'ICAP Version Not Supported',
};

/** quoted-string content without quote, backslash, SP or control characters: an opaque tag needs none. */
const ISTAG = /^[\x21\x23-\x5b\x5d-\x7e]{1,32}$/;
// eslint-disable-next-line no-control-regex
const BAD_VALUE_CHAR = /[\x00-\x08\x0a-\x1f\x7f]/;

export interface OptionsSettings {
  /** The Service header: a name for humans (cache.log). */
  service: string;
  maxConnections: number;
  /** Seconds the client may keep these options before asking again. */
  optionsTtl: number;
}

/**
 * The OPTIONS answer: REQMOD only, 204 allowed, a zero-byte preview (so a request with a body sends only its
 * head before the answer), and "Transfer-Preview: *" (preview every request, whatever the URL's extension).
 */
export function optionsResponse(stamp: Stamp, settings: OptionsSettings): Buffer {
  return head(200, stamp, [
    ['Methods', 'REQMOD'],
    ['Service', settings.service],
    ['Max-Connections', String(settings.maxConnections)],
    ['Options-TTL', String(settings.optionsTtl)],
    ['Allow', '204'],
    ['Preview', '0'],
    ['Transfer-Preview', '*'],
    ['Encapsulated', 'null-body=0'],
  ]);
}

/** "No modification": the client goes on with the request it has (RFC 3507 §4.6). */
export function noContentResponse(stamp: Stamp): Buffer {
  // The most frequent answer, the same bytes for a whole second (or until the ISTag changes): made once. A
  // socket write does not change the buffer, so every connection may send the same one.
  const second = Math.floor(stamp.now / 1000);
  if (lastNoContent.istag !== stamp.istag || lastNoContent.second !== second)
    lastNoContent = {
      istag: stamp.istag,
      second,
      bytes: head(204, stamp, [['Encapsulated', 'null-body=0']]),
    };
  return lastNoContent.bytes;
}

let lastNoContent: { istag: string; second: number; bytes: Buffer } = {
  istag: '',
  second: Number.NaN,
  bytes: Buffer.alloc(0),
};

export interface HttpAnswer {
  /** HTTP status, 200–599 (a redirect: 302 with Location; the portal: 511). */
  status: number;
  headers?: Readonly<Record<string, string>>;
  body?: string | Buffer;
}

/**
 * Request satisfaction (RFC 3507 §4.8.2): an ICAP 200 carrying an HTTP response, which the client sends to
 * its HTTP client instead of forwarding the request. Content-Length is added unless given (the client
 * re-frames the body for its own connection, but a browser then knows the body's length either way).
 */
export function httpResponse(stamp: Stamp, answer: HttpAnswer): Buffer {
  if (!Number.isInteger(answer.status) || answer.status < 200 || answer.status > 599)
    throw new TypeError(`HTTP status ${answer.status}: expected an integer from 200 to 599`);
  const body =
    answer.body === undefined
      ? undefined
      : Buffer.isBuffer(answer.body)
        ? answer.body
        : Buffer.from(answer.body);
  const fields = Object.entries(answer.headers ?? {});
  if (!fields.some(([name]) => name.toLowerCase() === 'content-length'))
    fields.push(['Content-Length', String(body?.length ?? 0)]);
  const reason = STATUS_CODES[answer.status] ?? 'Unknown';
  const httpHead = Buffer.from(`HTTP/1.1 ${answer.status} ${reason}\r\n${lines(fields)}\r\n`, 'latin1');
  const hasBody = body !== undefined && body.length > 0;
  const icap = head(200, stamp, [
    ['Encapsulated', `res-hdr=0, ${hasBody ? 'res-body' : 'null-body'}=${httpHead.length}`],
  ]);
  return Buffer.concat(hasBody ? [icap, httpHead, ...chunked(body)] : [icap, httpHead]);
}

/**
 * "No modification" for a client that does not take 204: the request goes back as it came (RFC 3507 §4.8.2,
 * "the ICAP server MUST return the entire message" when no 204 is allowed).
 */
export function unchangedRequest(stamp: Stamp, httpHead: Buffer, body: Buffer | undefined): Buffer {
  const hasBody = body !== undefined;
  const icap = head(200, stamp, [
    ['Encapsulated', `req-hdr=0, ${hasBody ? 'req-body' : 'null-body'}=${httpHead.length}`],
  ]);
  return Buffer.concat(hasBody ? [icap, httpHead, ...chunked(body)] : [icap, httpHead]);
}

/**
 * An error answer. `close`: the connection ends after it (a stream that cannot be framed any more), and says
 * so with "Connection: close".
 */
export function errorResponse(stamp: Stamp, status: number, close: boolean): Buffer {
  const fields: Array<[string, string]> = [['Encapsulated', 'null-body=0']];
  if (close) fields.push(['Connection', 'close']);
  return head(status, stamp, fields);
}

/** The last ISTag found valid and the last Date written: both change rarely, answers come by the thousand. */
let checkedIstag = '';
let lastDate = { second: Number.NaN, text: '' };

function httpDate(now: number): string {
  const second = Math.floor(now / 1000);
  if (lastDate.second !== second) lastDate = { second, text: new Date(second * 1000).toUTCString() };
  return lastDate.text;
}

function head(status: number, stamp: Stamp, fields: ReadonlyArray<readonly [string, string]>): Buffer {
  if (stamp.istag !== checkedIstag) {
    if (!ISTAG.test(stamp.istag))
      throw new TypeError(
        `ISTag ${JSON.stringify(stamp.istag)}: 1 to 32 printable characters, no quote or backslash`,
      );
    checkedIstag = stamp.istag;
  }
  const reason = ICAP_REASONS[status];
  if (reason === undefined) throw new TypeError(`ICAP status ${status}: not one this service sends`);
  const all: Array<readonly [string, string]> = [
    ['ISTag', `"${stamp.istag}"`],
    ['Date', httpDate(stamp.now)],
    ...fields,
  ];
  return Buffer.from(`ICAP/1.0 ${status} ${reason}\r\n${lines(all)}\r\n`, 'latin1');
}

/** Header names found to be tokens: a decision's few names come back with every answer. */
const tokenNames = new Set<string>();
/** A value with no control character (HTAB aside) and nothing past Latin-1: checked in one pass. */
// eslint-disable-next-line no-control-regex
const GOOD_VALUE = /^[^\x00-\x08\x0a-\x1f\x7f\u0100-\uffff]*$/;

function lines(fields: ReadonlyArray<readonly [string, string]>): string {
  let out = '';
  for (const [name, value] of fields) {
    if (!tokenNames.has(name)) {
      if (!isToken(name)) throw new TypeError(`header name ${JSON.stringify(name)} is not a token`);
      if (tokenNames.size < 1000) tokenNames.add(name);
    }
    if (GOOD_VALUE.test(value)) {
      out += `${name}: ${value}\r\n`;
      continue;
    }
    // What is wrong with it, for the message.
    if (BAD_VALUE_CHAR.test(value))
      throw new TypeError(`header ${name}: value ${JSON.stringify(value)} has a control character`);
    // latin1 on the wire: a value beyond it (a UTF-8 name in a Location) must come percent-encoded.
    for (let i = 0; i < value.length; i++) {
      if (value.charCodeAt(i) > 0xff)
        throw new TypeError(
          `header ${name}: value ${JSON.stringify(value)} is not Latin-1 (percent-encode it)`,
        );
    }
    out += `${name}: ${value}\r\n`;
  }
  return out;
}

/** A body as one chunk and the last chunk (RFC 3507 §4.4.2: encapsulated bodies are always chunked). */
function chunked(body: Buffer): Buffer[] {
  const last = Buffer.from('0\r\n\r\n', 'latin1');
  if (body.length === 0) return [last];
  return [
    Buffer.from(`${body.length.toString(16)}\r\n`, 'latin1'),
    body,
    Buffer.from('\r\n', 'latin1'),
    last,
  ];
}
