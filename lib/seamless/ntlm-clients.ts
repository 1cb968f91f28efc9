import type { NtlmClientCount } from '../store/ntlm-client-store.ts';

/**
 * The NTLM handshakes authd has seen since its last flush, counted in memory per client address (the request
 * path only adds to a Map); the shell writes them to the session DB at most once a minute. At most
 * `maxAddresses` addresses are kept between flushes, so a flood of handshakes from many addresses costs a
 * bounded Map: the rest are counted under '-' with the ones whose address Squid did not send.
 */
export const UNKNOWN_ADDRESS = '-';

export class NtlmClientTally {
  readonly #max: number;
  #counts = new Map<string, NtlmClientCount>();

  constructor(maxAddresses: number) {
    this.#max = maxAddresses;
  }

  add(address: string | undefined, now: number): void {
    this.#merge(address ?? UNKNOWN_ADDRESS, 1, now);
  }

  #merge(address: string, handshakes: number, lastSeen: number): void {
    const key = this.#counts.has(address) || this.#counts.size < this.#max ? address : UNKNOWN_ADDRESS;
    const entry = this.#counts.get(key);
    if (entry === undefined) this.#counts.set(key, { address: key, handshakes, lastSeen });
    else {
      entry.handshakes += handshakes;
      entry.lastSeen = Math.max(entry.lastSeen, lastSeen);
    }
  }

  get size(): number {
    return this.#counts.size;
  }

  /** Everything counted, and a fresh start. */
  take(): NtlmClientCount[] {
    const taken = [...this.#counts.values()];
    this.#counts = new Map();
    return taken;
  }

  /** Put back what a failed flush took, merged with what came since (the cap still holds). */
  restore(counts: readonly NtlmClientCount[]): void {
    for (const { address, handshakes, lastSeen } of counts) this.#merge(address, handshakes, lastSeen);
  }
}
