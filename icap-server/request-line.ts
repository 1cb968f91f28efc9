import { IcapProtocolError, show } from './errors.ts';
import { isToken } from './fields.ts';

/**
 * The ICAP request line and URI (RFC 3507 §4.2, §4.3.2):
 *
 *   Request-Line = Method SP ICAP_URI SP ICAP-Version CRLF
 *   Method       = "REQMOD" | "RESPMOD" | "OPTIONS" | Extension-Method
 *   ICAP-Version = "ICAP/1.0"
 *   ICAP_URI     = Scheme ":" Net_Path [ "?" Query ]
 *   Scheme       = "icap"
 *   Net_Path     = "//" Server [ Abs_Path ]
 *
 * This service offers REQMOD and OPTIONS. RESPMOD is ICAP's, so it gets 405 (not for this service); any other
 * token is a method ICAP does not have: 501.
 */
export type IcapMethod = 'OPTIONS' | 'REQMOD';

export interface RequestLine {
  method: IcapMethod;
  /** The URI as sent. */
  uri: string;
  /** Its path ("/reqmod"), "/" when it has none; the query is not part of it. */
  service: string;
}

/** Printable ASCII but SP: what a URI may hold (RFC 3986 §2); anything else is refused, not guessed at. */
const URI_CHARS = /^[\x21-\x7e]+$/;
const VERSION = /^ICAP\/[0-9]\.[0-9]$/;

export function parseRequestLine(line: string): RequestLine {
  const parts = line.split(' ');
  if (parts.length !== 3)
    throw new IcapProtocolError(
      'MALFORMED',
      `request line ${show(line)}: expected "METHOD icap://host/service ICAP/1.0" (three parts, single spaces)`,
    );
  const [method = '', uri = '', version = ''] = parts;
  if (!isToken(method))
    throw new IcapProtocolError('MALFORMED', `request line: method ${show(method)} is not a token`);
  if (version !== 'ICAP/1.0') {
    if (VERSION.test(version))
      throw new IcapProtocolError(
        'VERSION_NOT_SUPPORTED',
        `request line: version ${show(version)}: only ICAP/1.0`,
      );
    throw new IcapProtocolError('MALFORMED', `request line: version ${show(version)}: expected ICAP/1.0`);
  }
  if (method === 'RESPMOD')
    throw new IcapProtocolError(
      'METHOD_NOT_ALLOWED',
      'request line: RESPMOD: this service offers REQMOD only',
    );
  if (method !== 'OPTIONS' && method !== 'REQMOD')
    throw new IcapProtocolError(
      'METHOD_NOT_IMPLEMENTED',
      `request line: method ${show(method)}: allowed are OPTIONS and REQMOD`,
    );
  return { method, uri, service: servicePath(uri) };
}

function servicePath(uri: string): string {
  // "icap://" compared case-insensitively: schemes are (RFC 3986 §3.1).
  if (!URI_CHARS.test(uri) || uri.slice(0, 7).toLowerCase() !== 'icap://' || uri.length === 7)
    throw new IcapProtocolError(
      'MALFORMED',
      `request line: URI ${show(uri)}: expected icap://host[:port]/service`,
    );
  const query = uri.indexOf('?', 7);
  const beforeQuery = query < 0 ? uri : uri.slice(0, query);
  const slash = beforeQuery.indexOf('/', 7);
  return slash < 0 ? '/' : beforeQuery.slice(slash);
}
