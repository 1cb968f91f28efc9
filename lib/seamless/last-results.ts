import type { StatefulScheme } from '../helper-protocol/negotiate.ts';
import { parseReply } from '../helper-protocol/message.ts';

/**
 * The last seamless sign-on result authd saw per client address, for `doorman explain` ("why is this laptop
 * prompted?"): what the handshake ended in, a reason code, the user, when. Never a token, a ticket or a
 * password: only what cache.log already says. Bounded (LRU): a flood of addresses pushes out the oldest,
 * never grows the process.
 */

export const SeamlessOutcomes = ['OK', 'ERR', 'BH'] as const;
export type SeamlessOutcome = (typeof SeamlessOutcomes)[number];

export interface SeamlessResult {
  scheme: StatefulScheme;
  outcome: SeamlessOutcome;
  /**
   * Why, as a stable code: a Kerberos reject code (CLOCK_SKEW, REPLAY, WRONG_PRINCIPAL, EXPIRED, MALFORMED,
   * KEYTAB, ...), an ntlm_auth NT_STATUS_*, OUT_OF_SEQUENCE, NTLM_AUTH, FOREIGN_REALM, FOREIGN_DOMAIN,
   * REFUSED, FAILED; undefined for OK.
   */
  reason: string | undefined;
  /** The user signed in (OK only). */
  user: string | undefined;
  /** Clock ms. */
  at: number;
}

/** Addresses remembered by default: a campus's worth of clients, about 0.5 MB at most. */
export const DEFAULT_MAX_ADDRESSES = 4096;

export class LastSeamlessResults {
  readonly #max: number;
  // A Map iterates in insertion order: deleting and setting again moves an address to the end (the newest).
  readonly #byAddress = new Map<string, SeamlessResult>();

  constructor(max = DEFAULT_MAX_ADDRESSES) {
    if (!Number.isSafeInteger(max) || max < 1)
      throw new RangeError(`max: ${max} is not a positive whole number`);
    this.#max = max;
  }

  record(address: string, result: SeamlessResult): void {
    this.#byAddress.delete(address);
    this.#byAddress.set(address, result);
    if (this.#byAddress.size > this.#max) {
      const oldest = this.#byAddress.keys().next().value;
      if (oldest !== undefined) this.#byAddress.delete(oldest);
    }
  }

  get(address: string): SeamlessResult | undefined {
    return this.#byAddress.get(address);
  }

  get size(): number {
    return this.#byAddress.size;
  }
}

/** Kerberos reject codes as handshake.ts writes them in a BH: "Kerberos token refused (CLOCK_SKEW): ...". */
const KERBEROS_CODE = /^Kerberos token refused \(([A-Z_]+)\)/;
const NT_STATUS = /^NT_STATUS_[A-Z0-9_]+$/;
/** A token the classifier refused: "... (CODE)" at the end (lib/seamless/spnego.ts TokenError). */
const TRAILING_CODE = /\(([A-Z][A-Z0-9_]+)\)$/;

/**
 * A final reply line of the stateful helpers (lib/helper-protocol/negotiate.ts formatStatefulReply) as a
 * result: undefined for a challenge (TT: the handshake goes on) or a line that is none of these. Pure: the
 * user name is the `user=` value decoded, the message only read for its code, never kept.
 */
export function resultOfReply(scheme: StatefulScheme, line: string, at: number): SeamlessResult | undefined {
  const reply = parseReply(line.trimEnd(), false);
  if (reply === undefined) return undefined;
  if (reply.result === 'OK')
    return { scheme, outcome: 'OK', reason: undefined, user: reply.pairs.get('user'), at };
  const message = reply.pairs.get('message') ?? '';
  return { scheme, outcome: reply.result, reason: reasonOf(reply.result, message), user: undefined, at };
}

function reasonOf(result: 'ERR' | 'BH', message: string): string {
  if (NT_STATUS.test(message)) return message;
  if (result === 'ERR') {
    if (message.includes('not the joined realm')) return 'FOREIGN_REALM';
    if (message.includes('not the joined domain')) return 'FOREIGN_DOMAIN';
    return 'REFUSED';
  }
  const kerberos = KERBEROS_CODE.exec(message);
  if (kerberos?.[1] !== undefined) return kerberos[1];
  if (message.startsWith('out of sequence')) return 'OUT_OF_SEQUENCE';
  if (message.startsWith('ntlm_auth') || message.startsWith('no ntlm_auth')) return 'NTLM_AUTH';
  return TRAILING_CODE.exec(message)?.[1] ?? 'FAILED';
}
