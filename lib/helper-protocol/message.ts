import { unescapeField, escapeValue } from './escape.ts';

/**
 * One helper exchange, after Squid's Features/AddonHelpers:
 *
 *   request = [channel-ID SP] field *(SP field) LF        ; fields URL-escaped by Squid
 *   reply   = [channel-ID SP] result *(SP key "=" value) LF
 *   result  = "OK" / "ERR" / "BH"
 *
 * With `concurrency=N` (N > 0) every request starts with a channel-ID and the reply must repeat it; replies
 * may then come in any order. Custom keys end in "_" (Squid reserves the others).
 */
export type HelperResult = 'OK' | 'ERR' | 'BH';

export interface HelperRequest {
  /** Channel-ID, echoed in the reply; undefined when the helper runs without concurrency. */
  channel: string | undefined;
  /** Fields, URL-decoded. */
  fields: string[];
}

export interface HelperReply {
  result: HelperResult;
  /** kv-pairs in order. For BH and ERR, `message` is what Squid logs. */
  pairs?: ReadonlyArray<readonly [key: string, value: string]>;
  /**
   * A line for cache.log beside the answer (Squid logs an ERR's message only on its error page): the
   * helper's stderr, or, through the shim, a `#` line the shim writes to its stderr. Never a secret.
   */
  cacheLog?: string;
}

export type ParseOutcome =
  { ok: true; request: HelperRequest } | { ok: false; channel: string | undefined; message: string };

/**
 * Squid numbers a helper's requests with a 64-bit counter (uint64_t, at most 20 decimal digits) that only grows
 * for as long as the helper process lives, so a long-lived helper must take every width Squid can send, and
 * echo it exactly as written (as a string: past 2^53 a JavaScript number would round it).
 */
const CHANNEL = /^[0-9]{1,20}$/;

export function parseRequest(line: string, channelIds: boolean): ParseOutcome {
  const tokens = line.split(' ').filter((t) => t !== '');
  let channel: string | undefined;
  if (channelIds) {
    channel = tokens.shift();
    if (channel === undefined || !CHANNEL.test(channel)) {
      return { ok: false, channel: undefined, message: 'request has no channel-ID (is concurrency= set?)' };
    }
  }
  const fields: string[] = [];
  for (const token of tokens) {
    const field = unescapeField(token);
    if (field === undefined) return { ok: false, channel, message: 'request field is not UTF-8' };
    fields.push(field);
  }
  return { ok: true, request: { channel, fields } };
}

/** The channel-ID at the start of a line that could not be parsed as a whole (an overlong one). */
export function channelOf(head: string, channelIds: boolean): string | undefined {
  if (!channelIds) return undefined;
  const first = head.split(' ', 1)[0] ?? '';
  return CHANNEL.test(first) ? first : undefined;
}

const KEY = /^[A-Za-z0-9_-]+$/;

/** One reply line, LF included. Values are URL-escaped; keys must be Squid key names. */
export function formatReply(channel: string | undefined, reply: HelperReply): string {
  let line = channel === undefined ? reply.result : `${channel} ${reply.result}`;
  for (const [key, value] of reply.pairs ?? []) {
    if (!KEY.test(key))
      throw new TypeError(`helper reply key ${JSON.stringify(key)} is not a Squid key name`);
    line += ` ${key}=${escapeValue(value)}`;
  }
  return `${line}\n`;
}

/** A cache.log line is at most this long; longer ones are cut (the shim frames lines at 68 KiB). */
export const MAX_CACHE_LOG_CHARS = 1024;

/**
 * A cache.log line for the shim: `#doorman: `, the text on one line (C0 and C1 controls and Unicode line
 * separators as spaces, at most MAX_CACHE_LOG_CHARS), LF. No reply starts with `#` (a channel-ID or a result
 * does), so the shim tells them apart; it writes what follows the `#` in one write, so lines from many shims
 * never interleave.
 */
export function formatCacheLogLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  const one = text.slice(0, MAX_CACHE_LOG_CHARS).replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, ' ');
  return `#doorman: ${one}\n`;
}

export const ok = (pairs?: HelperReply['pairs']): HelperReply =>
  pairs ? { result: 'OK', pairs } : { result: 'OK' };
export const err = (message?: string): HelperReply =>
  message === undefined ? { result: 'ERR' } : { result: 'ERR', pairs: [['message', message]] };
export const bh = (message: string): HelperReply => ({ result: 'BH', pairs: [['message', message]] });

/**
 * A reply line as Squid reads it (without LF): its result and kv-pairs, values URL-decoded; for whoever asks a
 * helper as Squid would (`doorman explain`). Undefined for a line that is no reply (another result word, a
 * missing channel-ID, a value that is not UTF-8). Words without "=" are skipped, as Squid skips them.
 */
export function parseReply(
  line: string,
  channelIds: boolean,
): { channel: string | undefined; result: HelperResult; pairs: Map<string, string> } | undefined {
  const words = line.split(' ').filter((w) => w !== '');
  const channel = channelIds ? words.shift() : undefined;
  if (channelIds && (channel === undefined || !CHANNEL.test(channel))) return undefined;
  const [result, ...rest] = words;
  if (result !== 'OK' && result !== 'ERR' && result !== 'BH') return undefined;
  const pairs = new Map<string, string>();
  for (const word of rest) {
    const eq = word.indexOf('=');
    if (eq <= 0) continue;
    const value = unescapeField(word.slice(eq + 1));
    if (value === undefined) return undefined;
    pairs.set(word.slice(0, eq), value);
  }
  return { channel, result, pairs };
}
