/**
 * Escaping of values put into LDAP filters (RFC 4515) and distinguished names (RFC 4514). Every filter this
 * project sends is built with `ldapFilter` below, so a user name such as `*` or `)(uid=*` is always one
 * literal value and never filter syntax.
 *
 * RFC 4515 §3:
 *   valueencoding  = 0*(normal / escaped)
 *   normal         = UTF1SUBSET / UTFMB
 *   escaped        = ESC HEX HEX
 *   UTF1SUBSET     = %x01-27 / %x2B-5B / %x5D-7F
 *                    ; UTF1SUBSET excludes 0x00 (NUL), LPAREN, RPAREN, ASTERISK, and ESC.
 *
 * So NUL, `(`, `)`, `*` and `\` must be escaped; multi-byte UTF-8 (UTFMB) may stay as it is, and it does
 * here: ldapts parses a filter string back into BER by turning each `\XX` into ONE character, which is
 * right for ASCII but would turn the UTF-8 bytes of `é` (`\c3\a9`) into the two characters `Ã©`. ASCII
 * control characters are escaped too (allowed by the grammar, and it keeps a logged filter on one line).
 */
export function escapeFilterValue(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/[\x00-\x1f\x7f()*\\]/g, hexEscape);
}

/**
 * A tagged template that escapes every interpolated value: ldapFilter`(uid=${name})`. The literal parts are
 * trusted filter syntax written in this code; the values never are.
 */
export function ldapFilter(strings: TemplateStringsArray, ...values: readonly string[]): string {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += escapeFilterValue(value) + (strings[i + 1] ?? '');
  });
  return out;
}

/**
 * RFC 4514 §2.4: in an attribute value of a DN string,
 *   - a space or "#" character occurring at the beginning of the string,
 *   - a space character occurring at the end of the string,
 *   - one of the characters """, "+", ",", ";", "<", ">", or "\",
 *   - the null (U+0000) character
 * are escaped. "=" is escaped as well (§3 allows it, and some servers' parsers want it). Other characters,
 * UTF-8 included, stay as they are.
 */
export function escapeDnValue(value: string): string {
  const chars = [...value];
  return chars
    .map((c, i) => {
      if (c === '\x00') return '\\00';
      if ('"+,;<>\\='.includes(c)) return `\\${c}`;
      if (c === ' ' && (i === 0 || i === chars.length - 1)) return '\\ ';
      if (c === '#' && i === 0) return '\\#';
      return c;
    })
    .join('');
}

function hexEscape(c: string): string {
  return `\\${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
}
