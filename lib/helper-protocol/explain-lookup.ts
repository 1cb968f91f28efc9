import type { HelperRequest } from './message.ts';

/**
 * `doorman explain`'s session lookup: Squid's own request (`%SRC %>eui`) after a word no Squid request can
 * start with (Squid's first field there is the client's address), asked over the session socket like the
 * seamless query (./seamless-query.ts):
 *
 *   request = channel-ID SP "explain-lookup" SP address SP ( mac / "-" ) LF
 *   reply   = the session lookup's, exactly as Squid would get it
 *
 * The lookup answers it as it would answer Squid but records nothing: no "last seen" (a diagnosis must not
 * keep an idle session alive), not Squid's last lookup (the admin's Home screen), not counted in the metrics.
 * An authd older than this answers `BH message=not an IP address...`.
 */
export const EXPLAIN_LOOKUP_WORD = 'explain-lookup';

/** The request line asking what Squid would be told for `asked` ("address mac-or-dash"), LF included. */
export const formatExplainLookup = (channel: string, asked: string): string =>
  `${channel} ${EXPLAIN_LOOKUP_WORD} ${asked}\n`;

/** Squid's fields of an explain lookup; undefined for anything else. */
export function explainLookupOf(request: HelperRequest): readonly string[] | undefined {
  // Asked of every lookup: nothing is copied unless it is this query.
  return request.fields[0] === EXPLAIN_LOOKUP_WORD ? request.fields.slice(1) : undefined;
}
