import { escapeDnValue } from './escape.ts';

/**
 * Reading distinguished names, for comparing them (a group's DN from `member`, from `memberOf`, typed by an
 * administrator) and for taking a value out of one. Building DNs from values goes through escapeDnValue.
 *
 * RFC 4514 §3:
 *   distinguishedName = [ relativeDistinguishedName *( COMMA relativeDistinguishedName ) ]
 *   relativeDistinguishedName = attributeTypeAndValue *( PLUS attributeTypeAndValue )
 *   attributeTypeAndValue = attributeType EQUALS attributeValue
 *   attributeValue = string / hexstring
 *   pair = ESC ( ESC / special / hexpair )
 *   hexstring = SHARP 1*hexpair
 *
 * Read leniently, as servers write them: spaces around `,`, `+` and `=` are ignored (RFC 2253 and AD
 * output), and `;` separates RDNs like `,` (RFC 1779).
 */
export interface Ava {
  /** The attribute type as written (`CN`, `cn`, `2.5.4.3`). */
  type: string;
  /** The value with escapes resolved; a `#hexstring` value is kept as written. */
  value: string;
}
export type Rdn = readonly Ava[];

const utf8 = new TextDecoder('utf-8', { fatal: true });
const TYPE = /^(?:[A-Za-z][A-Za-z0-9-]*|\d+(?:\.\d+)*)$/;
/** `#` and hex pairs, matched where the value starts (sticky): no copy of the rest of the DN per value. */
const HEX_STRING = /#(?:[0-9A-Fa-f]{2})+/y;

/**
 * The RDNs of `dn`, most specific first; undefined when it is not a DN. The empty string is the root DN.
 * One pass, in time linear in the length of `dn` (DNs come from administrators and from LDAP answers).
 */
export function parseDn(dn: string): Rdn[] | undefined {
  const rdns: Rdn[] = [];
  let i = 0;
  const s = dn;
  const skipSpaces = () => {
    while (s[i] === ' ') i++;
  };
  skipSpaces();
  if (i === s.length) return [];
  let rdn: Ava[] = [];
  for (;;) {
    skipSpaces();
    const eq = s.indexOf('=', i);
    if (eq === -1) return undefined;
    const type = s.slice(i, eq).trim();
    if (!TYPE.test(type)) return undefined;
    i = eq + 1;
    skipSpaces();
    const value = readValue();
    if (value === undefined) return undefined;
    rdn.push({ type, value });
    if (i === s.length) {
      rdns.push(rdn);
      return rdns;
    }
    const separator = s[i];
    i++;
    if (separator === ',' || separator === ';') {
      rdns.push(rdn);
      rdn = [];
    } else if (separator !== '+') {
      return undefined;
    }
  }

  function readValue(): string | undefined {
    if (s[i] === '#') {
      HEX_STRING.lastIndex = i;
      const m = HEX_STRING.exec(s);
      if (m === null) return undefined;
      i += m[0].length;
      skipSpaces();
      return m[0].toLowerCase();
    }
    const bytes: number[] = [];
    // Unescaped trailing spaces are not part of the value; escaped ones are, so track where they end.
    let keep = 0;
    while (i < s.length) {
      const c = s[i] as string;
      if (c === ',' || c === '+' || c === ';') break;
      if (c === '\\') {
        const hex = /^[0-9A-Fa-f]{2}/.exec(s.slice(i + 1, i + 3));
        if (hex !== null) {
          bytes.push(parseInt(hex[0], 16));
          i += 3;
        } else {
          const next = s.codePointAt(i + 1);
          if (next === undefined) return undefined;
          const ch = String.fromCodePoint(next);
          bytes.push(...Buffer.from(ch, 'utf8'));
          i += 1 + ch.length;
        }
        keep = bytes.length;
        continue;
      }
      const ch = String.fromCodePoint(s.codePointAt(i) as number);
      bytes.push(...Buffer.from(ch, 'utf8'));
      if (c !== ' ') keep = bytes.length;
      i += ch.length;
    }
    try {
      return utf8.decode(Uint8Array.from(bytes.slice(0, keep)));
    } catch {
      return undefined;
    }
  }
}

/**
 * A form of `dn` in which equal DNs are equal strings: attribute types and values lower-cased (the naming
 * attributes in use, cn/ou/dc/uid, all match case-insensitively), values Unicode-normalised (NFC) and
 * re-escaped one way, spaces dropped. A string that is not a DN is only trimmed and lower-cased.
 */
export function dnKey(dn: string): string {
  const rdns = parseDn(dn);
  if (rdns === undefined) return dn.trim().toLowerCase();
  return rdns
    .map((rdn) =>
      rdn
        .map((ava) => `${ava.type.toLowerCase()}=${escapeDnValue(ava.value.normalize('NFC').toLowerCase())}`)
        .sort()
        .join('+'),
    )
    .join(',');
}

/** The value of the first (most specific) RDN: `Staff Users` for `CN=Staff Users,OU=Groups,DC=…`. */
export function firstRdnValue(dn: string): string | undefined {
  return parseDn(dn)?.[0]?.[0]?.value;
}

/** The DNS domain named by a DN's domain components: `DC=example,DC=test` → `example.test`. */
export function dnsDomainOf(dn: string): string | undefined {
  const labels = (parseDn(dn) ?? []).filter((r) => r[0]?.type.toLowerCase() === 'dc').map((r) => r[0]?.value);
  return labels.length === 0 ? undefined : labels.join('.').toLowerCase();
}
