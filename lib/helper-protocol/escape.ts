/**
 * Squid URL-escapes every field it sends a helper (rfc1738_escape), and URL-decodes an unquoted kv-pair
 * value in a reply (Helper::Reply::parseResponseKeys runs rfc1738_unescape on it). So: decode %XX in requests,
 * encode everything but unreserved characters in replies. Bytes are UTF-8.
 */
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Decode a %-escaped field. Undefined when the bytes are not UTF-8. A malformed %-escape stays literal, as in Squid. */
export function unescapeField(field: string): string | undefined {
  if (!field.includes('%') && isAscii(field)) return field;
  const bytes = Buffer.from(field, 'latin1');
  const out = Buffer.allocUnsafe(bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number;
    if (b === 0x25 && i + 2 < bytes.length && isHex(bytes[i + 1]) && isHex(bytes[i + 2])) {
      out[n++] = parseInt(String.fromCharCode(bytes[i + 1] as number, bytes[i + 2] as number), 16);
      i += 2;
    } else {
      out[n++] = b;
    }
  }
  try {
    return utf8.decode(out.subarray(0, n));
  } catch {
    return undefined;
  }
}

/** Escape a reply value so Squid reads it back unchanged: only [A-Za-z0-9-._~] pass as they are. */
export function escapeValue(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function isHex(b: number | undefined): boolean {
  return (
    b !== undefined && ((b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66))
  );
}

function isAscii(s: string): boolean {
  // eslint-disable-next-line no-control-regex
  return /^[\x00-\x7f]*$/.test(s);
}
