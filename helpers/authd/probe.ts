import { isIP } from 'node:net';
import { parseReply } from '../../lib/helper-protocol/message.ts';
import { askAuthd, type AskResult } from './ask.ts';

/**
 * Is authd answering? One session lookup over its socket, as a shim sends it, answered within `deadlineMs`.
 * The address asked about (192.0.2.0, TEST-NET-1) is never a client's, so the probe neither finds a session
 * nor marks one as seen. Any answer line (OK, ERR, even BH for a DB it cannot read) proves the process and its
 * event loop alive; what the DB says is the DB's matter, which a restart would not fix. The session lookup's
 * answer to it carries the last lookup Squid asked (lastLookupOf), which the admin Home screen shows.
 */
export type ProbeResult = (AskResult & { ok: true; lastLookup?: LastLookup }) | (AskResult & { ok: false });

/** The address the probe asks about: TEST-NET-1's first, never a client's (RFC 5737). */
export const PROBE_ADDRESS = '192.0.2.0';
export const PROBE_LINE = `0 ${PROBE_ADDRESS} -\n`;

/** The last lookup Squid asked this authd, which the session lookup adds to its answer to the probe. */
export interface LastLookup {
  /** Ms since the epoch. */
  at: number;
  ip: string;
  answer: 'OK' | 'ERR';
}

/** The probe's answer line (with its channel-ID) and its last lookup, if it carries one (helpers/session-lookup.ts, #probeAnswer). */
export function lastLookupOf(line: string): LastLookup | undefined {
  const pairs = parseReply(line, true)?.pairs;
  const at = Number(pairs?.get('last_lookup_at'));
  const ip = pairs?.get('last_lookup_ip');
  const answer = pairs?.get('last_lookup_answer');
  if (!Number.isSafeInteger(at) || at < 0 || ip === undefined || isIP(ip) === 0) return undefined;
  return answer === 'OK' || answer === 'ERR' ? { at, ip, answer } : undefined;
}

export async function probeAuthd(socketPath: string, deadlineMs: number): Promise<ProbeResult> {
  const asked = await askAuthd(socketPath, PROBE_LINE, deadlineMs);
  if (!asked.ok) return asked;
  const lastLookup = lastLookupOf(asked.answer);
  return lastLookup === undefined ? asked : { ...asked, lastLookup };
}
