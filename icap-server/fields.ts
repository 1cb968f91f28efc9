import { IcapProtocolError, show } from './errors.ts';

/**
 * Header fields, as ICAP borrows them from HTTP (RFC 3507 §4.3: "the same as HTTP/1.1", RFC 2616 §4.2,
 * restated in RFC 9110 §5 / RFC 9112 §5):
 *
 *   message-header = field-name ":" [ field-value ]
 *   field-name     = token
 *   token          = 1*tchar
 *   tchar          = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~"
 *                    / DIGIT / ALPHA
 *   field-value    = *( field-content / obs-fold )        ; OWS around it is not part of it
 *
 * Folded lines (obs-fold) are refused, as RFC 9112 §5.2 allows a server to do: two parsers that unfold
 * differently see two different messages.
 */
export type Field = readonly [name: string, value: string];

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Any control character but HTAB, and DEL: never in a field value. */
// eslint-disable-next-line no-control-regex
const BAD_VALUE_CHAR = /[\x00-\x08\x0a-\x1f\x7f]/;

/**
 * A CR not followed by LF, or an LF not preceded by CR: in a head split on CRLF, any CR or LF left is a bare
 * one. One search of the whole head; its lines are looked at only to name the bad one.
 */
export const BARE_CR_OR_LF = /\r(?!\n)|(?<!\r)\n/;

export function isToken(text: string): boolean {
  return TOKEN.test(text);
}

/**
 * The field lines of a header block (start line and final empty line already taken off), in order.
 * `what` names the block in error messages ("ICAP header", "HTTP header").
 */
export function parseFields(lines: readonly string[], what: string, maxCount: number): Field[] {
  if (lines.length > maxCount)
    throw new IcapProtocolError('TOO_LARGE', `${what}s: ${lines.length} fields, at most ${maxCount} allowed`);
  // Every request goes through here twice (ICAP and HTTP head): one pattern per well-formed line, and the
  // checks one by one only for a line it refuses, to say what is wrong with it.
  const fields: Field[] = [];
  for (const line of lines) {
    if (!FIELD_LINE.test(line)) return parseFieldsStrictly(lines, what);
    const colon = line.indexOf(':');
    fields.push([line.slice(0, colon), trimOws(line.slice(colon + 1))]);
  }
  return fields;
}

/**
 * A well-formed field line: a token, ":", a value without control characters but HTAB (a folded line starts
 * with SP or HTAB, which no token does). Linear: each part's characters exclude the one that ends it.
 */
// eslint-disable-next-line no-control-regex
const FIELD_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+:[^\x00-\x08\x0a-\x1f\x7f]*$/;

/** The same lines checked one by one, throwing for the first that is not a field line. */
function parseFieldsStrictly(lines: readonly string[], what: string): Field[] {
  const fields: Field[] = [];
  for (const line of lines) {
    if (line.startsWith(' ') || line.startsWith('\t'))
      throw new IcapProtocolError('MALFORMED', `${what} ${show(line)}: folded lines are not accepted`);
    const colon = line.indexOf(':');
    const name = colon < 0 ? '' : line.slice(0, colon);
    if (!isToken(name))
      throw new IcapProtocolError(
        'MALFORMED',
        `${what} line ${show(line)}: expected a field name (a token) followed by ":"`,
      );
    const value = trimOws(line.slice(colon + 1));
    if (BAD_VALUE_CHAR.test(value))
      throw new IcapProtocolError(
        'MALFORMED',
        `${what} ${name}: value ${show(value)} has a control character`,
      );
    fields.push([name, value]);
  }
  return fields;
}

/** OWS = *( SP / HTAB ), trimmed by a character scan (no pattern, so linear whatever the value). */
function trimOws(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && (text[start] === ' ' || text[start] === '\t')) start++;
  while (end > start && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--;
  return text.slice(start, end);
}

/**
 * Case-insensitive access to fields. Repeated fields are joined with ", " (RFC 9110 §5.3), except the ones
 * named in `singletons`, which may appear once: a second Encapsulated or Preview is an attack or a bug, and
 * either way there is no safe choice between the two.
 */
export class Headers {
  #byName: Map<string, string> | undefined;
  readonly fields: readonly Field[];

  /**
   * With singletons the fields are indexed (and checked) at once; without, only when a field is first asked
   * for: most of an encapsulated HTTP head is never looked at.
   */
  constructor(fields: readonly Field[], what: string, singletons: readonly string[] = []) {
    this.fields = fields;
    if (singletons.length > 0) this.#byName = index(fields, what, singletons);
  }

  get(name: string): string | undefined {
    this.#byName ??= index(this.fields, '', []);
    return this.#byName.get(name.toLowerCase());
  }

  has(name: string): boolean {
    this.#byName ??= index(this.fields, '', []);
    return this.#byName.has(name.toLowerCase());
  }
}

function index(fields: readonly Field[], what: string, singletons: readonly string[]): Map<string, string> {
  const byName = new Map<string, string>();
  for (const [name, value] of fields) {
    const key = name.toLowerCase();
    const seen = byName.get(key);
    if (seen === undefined) byName.set(key, value);
    else if (singletons.includes(key))
      throw new IcapProtocolError('MALFORMED', `${what} ${name}: appears more than once`);
    else byName.set(key, `${seen}, ${value}`);
  }
  return byName;
}

/** The members of a comma-separated list field, trimmed, empty ones dropped (RFC 9110 §5.6.1). */
export function listMembers(value: string | undefined): string[] {
  if (value === undefined) return [];
  return value
    .split(',')
    .map((member) => trimOws(member))
    .filter((member) => member !== '');
}
