import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const FIXTURES = join(import.meta.dirname, 'fixtures');

/**
 * An LDIF template from fixtures/ with its `{{NAME}}` placeholders filled in. Templates are written readably,
 * with raw UTF-8 (`cn: Ünïcødé Group`); every value that is not an RFC 2849 SAFE-STRING comes out base64
 * encoded (`cn:: …`), the only form the LDIF grammar allows for it.
 */
export function renderLdifTemplate(name: string, vars: Readonly<Record<string, string>>): string {
  const text = readFileSync(join(FIXTURES, name), 'utf8').replace(/\{\{(\w+)\}\}/g, (_, key: string) => {
    const value = vars[key];
    if (value === undefined) throw new Error(`${name}: no value for placeholder {{${key}}}`);
    return value;
  });
  return safeLdif(text);
}

/**
 * RFC 2849:
 *   SAFE-CHAR = %x01-09 / %x0B-0C / %x0E-7F   ; any value <= 127 except NUL, LF, CR
 *   SAFE-INIT-CHAR = %x01-09 / %x0B-0C / %x0E-1F / %x21-39 / %x3B / %x3D-7F   ; not SPACE, colon, less-than
 *   SAFE-STRING = [SAFE-INIT-CHAR *SAFE-CHAR]
 * A value that ends with a space must be base64 encoded too (trailing spaces are stripped otherwise).
 */
export function safeLdif(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      if (line.startsWith('#') || line.startsWith(' ')) return line;
      const match = /^([A-Za-z0-9;.-]+): (.*)$/.exec(line);
      if (!match) return line;
      const [, attribute = '', value = ''] = match;
      return isSafeString(value) ? line : `${attribute}:: ${Buffer.from(value, 'utf8').toString('base64')}`;
    })
    .join('\n');
}

function isSafeString(value: string): boolean {
  if (/^[ :<]/.test(value) || value.endsWith(' ')) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x00 || c === 0x0a || c === 0x0d || c > 0x7f) return false;
  }
  return true;
}
