import type { SeamlessResult } from '../seamless/last-results.ts';
import { SeamlessOutcomes, type SeamlessOutcome } from '../seamless/last-results.ts';
import { escapeValue } from './escape.ts';
import { formatReply, parseReply, type HelperReply, type HelperRequest } from './message.ts';

/**
 * "What was the last seamless sign-on result for this address?": asked of authd by `doorman explain` (the
 * CLI and the admin screen) over the session socket, the one connection every Doorman process already has
 * to authd (the probe's: helpers/authd/probe.ts). One line in the helper protocol's own form, with a word
 * no Squid request can start with (Squid's first field there is the client's address):
 *
 *   request = channel-ID SP "seamless-last" SP address LF
 *   reply   = channel-ID SP "OK" SP "scheme=" scheme SP "outcome=" ("OK" / "ERR" / "BH")
 *             [SP "reason=" code] [SP "user=" name] SP "at=" ms LF      ; the last result seen
 *           / channel-ID SP "ERR" SP "message=none" LF                     ; none seen since authd started
 *           / channel-ID SP "BH" SP "message=" text LF                     ; not an address
 *
 * An authd older than this answers the request as a lookup of an address that is none: `BH message=not an IP
 * address...`; the asker says so. Whoever can reach the socket is Squid's helper user or root, who may ask
 * the session lookup who is at an address anyway: a user name and a code add nothing to what they can learn.
 * Pure: no socket here (the CLI's is helpers/authd/ask.ts, authd's is helpers/authd/seamless-query.ts).
 */

export const SEAMLESS_QUERY_WORD = 'seamless-last';

/** The request line for `address` (normalised by the caller), LF included. */
export function formatSeamlessQuery(channel: string, address: string): string {
  return `${channel} ${SEAMLESS_QUERY_WORD} ${escapeValue(address)}\n`;
}

/** The address asked about, when `request` is this query; undefined for anything else (a lookup). */
export function seamlessQueryOf(request: HelperRequest): { address: string | undefined } | undefined {
  // Asked of every request on the session socket: nothing is copied unless it is this query.
  const fields = request.fields;
  if (fields[0] !== SEAMLESS_QUERY_WORD) return undefined;
  return { address: fields.length === 2 ? fields[1] : undefined };
}

/** authd's answer to the query. */
export function seamlessAnswer(result: SeamlessResult | undefined): HelperReply {
  if (result === undefined) return { result: 'ERR', pairs: [['message', 'none']] };
  return {
    result: 'OK',
    pairs: [
      ['scheme', result.scheme],
      ['outcome', result.outcome],
      ...(result.reason === undefined ? [] : [['reason', result.reason] as const]),
      ...(result.user === undefined ? [] : [['user', result.user] as const]),
      ['at', String(result.at)],
    ],
  };
}

/** What the asker reads from the answer line (its channel-ID removed or not). */
export type SeamlessQueryAnswer =
  | { kind: 'result'; result: SeamlessResult }
  | { kind: 'none' }
  /** authd refused the question (an older authd, or a bad address): the message it gave. */
  | { kind: 'refused'; message: string }
  | { kind: 'malformed'; line: string };

/** Parse authd's answer line (without LF), with its channel-ID first. Never throws. */
export function parseSeamlessAnswer(line: string): SeamlessQueryAnswer {
  const reply = parseReply(line, true);
  if (reply === undefined) return { kind: 'malformed', line: line.slice(0, 200) };
  const { result, pairs } = reply;
  if (result === 'ERR' && pairs.get('message') === 'none') return { kind: 'none' };
  if (result !== 'OK') return { kind: 'refused', message: pairs.get('message') ?? '' };
  const scheme = pairs.get('scheme');
  const outcome = pairs.get('outcome');
  const at = Number(pairs.get('at'));
  if ((scheme !== 'negotiate' && scheme !== 'ntlm') || !isOutcome(outcome) || !Number.isSafeInteger(at))
    return { kind: 'malformed', line: line.slice(0, 200) };
  return {
    kind: 'result',
    result: { scheme, outcome, reason: pairs.get('reason'), user: pairs.get('user'), at },
  };
}

function isOutcome(value: string | undefined): value is SeamlessOutcome {
  return (SeamlessOutcomes as readonly (string | undefined)[]).includes(value);
}

/** The answer as authd writes it, LF included (for tests and the handler alike). */
export const formatSeamlessAnswer = (channel: string, result: SeamlessResult | undefined): string =>
  formatReply(channel, seamlessAnswer(result));
