import { showValue } from '../../errors.ts';
import { capText, FactError } from './errors.ts';

/**
 * The entries of a keytab as `klist -kte <keytab>` (MIT) lists them: the key version, the principal and the
 * encryption type of each key. Keys themselves are never read (`-K` would print them; such a line is refused
 * without being quoted). The lab's keytab after `net ads keytab add_update_ads HTTP -P` (REPORT §6.1):
 *
 *   Keytab name: FILE:/tmp/lab-seamless/samba/member/http.keytab
 *   KVNO Timestamp         Principal
 *   ---- ----------------- --------------------------------------------------------
 *      1 11/22/26 21:28:36 HTTP/proxy.example.test@EXAMPLE.TEST (aes256-cts-hmac-sha1-96)
 *      1 11/22/26 21:28:36 HTTP/PROXY@EXAMPLE.TEST (DEPRECATED:arcfour-hmac)
 *
 * An entry line is `KVNO [timestamp] PRINCIPAL (ENCTYPE)`: the timestamp's form follows the locale (and is
 * absent without `-t`), so it is whatever lies between the key version and the principal. Lines are split on
 * white space: linear in the text.
 */

/** A keytab of a few hundred keys lists in well under this. */
export const MAX_KLIST_CHARS = 256 * 1024;

export interface KeytabEntry {
  kvno: number;
  /** As klist prints it: `HTTP/proxy.example.test@EXAMPLE.TEST`. */
  principal: string;
  /** The canonical MIT name (`rc4-hmac` for klist's `DEPRECATED:arcfour-hmac`), see canonicalEnctype. */
  enctype: string;
  /** klist's own spelling, for messages. */
  enctypeShown: string;
  /** The timestamp as printed, '' without `-t`. */
  timestamp: string;
}

/** MIT's other names for the enctypes Active Directory uses, mapped to the names krb5.conf is written with. */
const ENCTYPE_ALIASES: Readonly<Record<string, string>> = {
  'arcfour-hmac': 'rc4-hmac',
  'arcfour-hmac-md5': 'rc4-hmac',
  'rc4-hmac': 'rc4-hmac',
  'aes256-cts': 'aes256-cts-hmac-sha1-96',
  'aes256-cts-hmac-sha1-96': 'aes256-cts-hmac-sha1-96',
  'aes128-cts': 'aes128-cts-hmac-sha1-96',
  'aes128-cts-hmac-sha1-96': 'aes128-cts-hmac-sha1-96',
  'des-cbc-md5': 'des-cbc-md5',
  'des-cbc-crc': 'des-cbc-crc',
};

/** `DEPRECATED:arcfour-hmac` → `rc4-hmac`; names without an alias are lower-cased and kept. */
export function canonicalEnctype(name: string): string {
  const bare = name.startsWith('DEPRECATED:') ? name.slice('DEPRECATED:'.length) : name;
  const lower = bare.toLowerCase();
  return ENCTYPE_ALIASES[lower] ?? lower;
}

const DIGITS = /^\d{1,10}$/;

/** Parse klist's listing. An empty keytab gives []. Throws FactError for anything else than klist's shape. */
export function parseKlistKeytab(text: string): KeytabEntry[] {
  const field = 'klist';
  capText(field, text, MAX_KLIST_CHARS);
  const entries: KeytabEntry[] = [];
  let sawHeader = false;
  const lines = text.split('\n');
  for (const [index, raw] of lines.entries()) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const trimmed = line.trim();
    if (trimmed === '') continue;
    if (trimmed.startsWith('Keytab name:') || trimmed.startsWith('KVNO ') || /^-+(?: -+)*$/.test(trimmed)) {
      sawHeader = true;
      continue;
    }
    const where = `line ${index + 1}`;
    const tokens = trimmed.split(/\s+/);
    const first = tokens[0] ?? '';
    const last = tokens.at(-1) ?? '';
    if (tokens.some((token) => token.startsWith('(0x'))) {
      // klist -K: the key itself is on this line. Say so, never quote it.
      throw new FactError(
        'MALFORMED',
        field,
        `${where} carries key contents (klist -K); run klist -kte, without -K`,
      );
    }
    if (tokens.length < 3 || !DIGITS.test(first) || !last.startsWith('(') || !last.endsWith(')')) {
      throw new FactError(
        'MALFORMED',
        field,
        `${where} ${showValue(trimmed)} is not a keytab entry "KVNO [timestamp] PRINCIPAL (ENCTYPE)" as klist -kte lists them`,
      );
    }
    const enctypeShown = last.slice(1, -1);
    if (enctypeShown === '') {
      throw new FactError('MALFORMED', field, `${where} ${showValue(trimmed)} names no encryption type`);
    }
    const kvno = Number(first);
    if (kvno > 0xffffffff) {
      throw new FactError('MALFORMED', field, `${where}: key version ${first} is larger than 32 bits`);
    }
    entries.push({
      kvno,
      principal: tokens.at(-2) ?? '',
      enctype: canonicalEnctype(enctypeShown),
      enctypeShown,
      timestamp: tokens.slice(1, -2).join(' '),
    });
  }
  if (!sawHeader && entries.length === 0) {
    throw new FactError('MALFORMED', field, 'is empty: klist -kte prints at least "Keytab name: …"');
  }
  return entries;
}
