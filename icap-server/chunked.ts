import { IcapProtocolError, show } from './errors.ts';
import { isToken } from './fields.ts';

/**
 * Encapsulated bodies are always chunked (RFC 3507 §4.4.2), with HTTP's grammar (RFC 9112 §7.1):
 *
 *   chunked-body = *chunk last-chunk trailer-section CRLF
 *   chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
 *   chunk-size   = 1*HEXDIG
 *   last-chunk   = 1*("0") [ chunk-ext ] CRLF
 *   chunk-ext    = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
 *
 * plus ICAP's one extension (RFC 3507 §4.5): the last chunk of a preview is "0; ieof" when the preview holds
 * the whole body, a plain "0" when more would follow a "100 Continue".
 */
export interface ChunkSize {
  size: number;
  /** The `ieof` extension was present (meaningful on the last chunk only). */
  ieof: boolean;
}

/** At most 16 hex digits (leading zeros allowed); the value is then held to the cap. */
const HEX = /^[0-9A-Fa-f]{1,16}$/;

export function parseChunkSize(line: string, maxChunkBytes: number): ChunkSize {
  const semicolon = line.indexOf(';');
  const digits = (semicolon < 0 ? line : line.slice(0, semicolon)).trimEnd();
  if (!HEX.test(digits))
    throw new IcapProtocolError('MALFORMED', `chunk size line ${show(line)}: expected hex digits`);
  const size = parseInt(digits, 16);
  if (size > maxChunkBytes)
    throw new IcapProtocolError(
      'TOO_LARGE',
      `chunk size ${show(digits)}: at most ${maxChunkBytes} bytes allowed`,
    );
  let ieof = false;
  if (semicolon >= 0) {
    for (const extension of line.slice(semicolon + 1).split(';')) {
      const eq = extension.indexOf('=');
      const name = (eq < 0 ? extension : extension.slice(0, eq)).trim();
      if (!isToken(name))
        throw new IcapProtocolError(
          'MALFORMED',
          `chunk size line ${show(line)}: bad extension ${show(extension)}`,
        );
      if (name.toLowerCase() === 'ieof') ieof = true;
    }
  }
  return { size, ieof };
}
