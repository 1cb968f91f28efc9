import { IcapProtocolError, show } from './errors.ts';
import { BARE_CR_OR_LF, Headers, isToken, parseFields } from './fields.ts';

/**
 * The encapsulated HTTP request head of a REQMOD (RFC 3507 §4.8; HTTP syntax from RFC 9112 §3):
 *
 *   request-line = method SP request-target SP HTTP-version CRLF
 *   HTTP-version = "HTTP" "/" DIGIT "." DIGIT
 *   head         = request-line *( field-line CRLF ) CRLF
 *
 * Squid sends the absolute URL as the target (it rebuilds one for intercepted requests too), so the decision
 * sees the whole URL. The raw bytes are kept: answering "no change" to a client that does not allow 204 means
 * sending the head back as it came.
 */
export interface HttpRequestHead {
  method: string;
  target: string;
  version: string;
  headers: Headers;
  /** The head as received, final empty line included. */
  raw: Buffer;
}

const HTTP_VERSION = /^HTTP\/[0-9]\.[0-9]$/;
/** No SP and no control character (bytes past 0x7e pass: a target is the client's, only framing matters). */
// eslint-disable-next-line no-control-regex
const BAD_TARGET_CHAR = /[\x00-\x20\x7f]/;

export function parseHttpHead(raw: Buffer, maxFields: number): HttpRequestHead {
  const text = raw.toString('latin1');
  // The offsets put the end of the head at the body entity: it must end there, in CRLF CRLF, and not before.
  const end = text.indexOf('\r\n\r\n');
  if (end !== text.length - 4)
    throw new IcapProtocolError(
      'MALFORMED',
      end < 0
        ? 'HTTP head: does not end in an empty line where Encapsulated says the body starts'
        : `HTTP head: ends at byte ${end + 4}, Encapsulated says ${text.length}`,
    );
  const lines = text.slice(0, end).split('\r\n');
  const requestLine = lines.shift() ?? '';
  if (requestLine.includes('\n') || requestLine.includes('\r'))
    throw new IcapProtocolError('MALFORMED', `HTTP request line ${show(requestLine)}: bare CR or LF`);
  const parts = requestLine.split(' ');
  const [method = '', target = '', version = ''] = parts;
  if (
    parts.length !== 3 ||
    !isToken(method) ||
    target === '' ||
    BAD_TARGET_CHAR.test(target) ||
    !HTTP_VERSION.test(version)
  )
    throw new IcapProtocolError(
      'MALFORMED',
      `HTTP request line ${show(requestLine)}: expected "METHOD target HTTP/1.1"`,
    );
  if (BARE_CR_OR_LF.test(text)) {
    for (const line of lines) {
      if (line.includes('\n') || line.includes('\r'))
        throw new IcapProtocolError('MALFORMED', `HTTP header ${show(line)}: bare CR or LF`);
    }
  }
  const headers = new Headers(parseFields(lines, 'HTTP header', maxFields), 'HTTP header');
  return { method, target, version, headers, raw };
}
