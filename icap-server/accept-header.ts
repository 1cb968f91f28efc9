/** Longest Accept header parsed; a longer one is not a page load (browsers send under 200 characters). */
export const MAX_ACCEPT = 1024;

/**
 * Whether the client takes text/html (RFC 9110 §12.5.1):
 *
 *   Accept      = #( media-range [ weight ] )
 *   media-range = ( "*" "/" "*" / ( type "/" "*" ) / ( type "/" subtype ) ) parameters
 *   weight      = OWS ";" OWS "q=" qvalue
 *   qvalue      = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
 *
 * The most specific range that covers text/html decides (text/html over text/* over *\/*; parameters other
 * than q are not told apart), and it must have q > 0: "text/html;q=0, *\/*" refuses HTML. No Accept at all
 * takes anything (§12.5.1). A member that does not parse is skipped; a header over MAX_ACCEPT is no page load.
 */
export function acceptsHtml(accept: string | undefined): boolean {
  if (accept === undefined) return true;
  if (accept.length > MAX_ACCEPT) return false;
  let best = 0;
  let quality = 0;
  for (const member of splitOutsideQuotes(accept, ',')) {
    const [range = '', ...params] = splitOutsideQuotes(member, ';').map((part) => part.trim());
    const slash = range.indexOf('/');
    if (slash < 0) continue;
    const type = range.slice(0, slash).toLowerCase();
    const subtype = range.slice(slash + 1).toLowerCase();
    const specificity =
      type === 'text' && subtype === 'html'
        ? 3
        : type === 'text' && subtype === '*'
          ? 2
          : type === '*' && subtype === '*'
            ? 1
            : 0;
    if (specificity === 0) continue;
    let q = 1;
    for (const param of params) {
      const eq = param.indexOf('=');
      if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'q') continue;
      q = parseQvalue(param.slice(eq + 1).trim());
      break;
    }
    if (Number.isNaN(q)) continue;
    // The same range twice: the more generous one counts.
    if (specificity > best || (specificity === best && q > quality)) {
      best = specificity;
      quality = q;
    }
  }
  return best > 0 && quality > 0;
}

const QVALUE = /^(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)$/;

function parseQvalue(text: string): number {
  return QVALUE.test(text) ? Number(text) : Number.NaN;
}

/** Split on `separator` outside double-quoted strings (a parameter value may hold a comma), by a scan. */
function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '\\') i++;
    else if (c === '"') quoted = !quoted;
    else if (!quoted && c === separator) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}
