import { addressGroup } from '../lib/net/address.ts';

/**
 * Places for ICAP connections: at most `max` in all, and at most `perAddress` unproven ones from one client
 * address (an IPv6 client: its /64, as the web app counts), so one address cannot take every place. A
 * connection that has proved to be Squid's (Slot.prove) counts in the total only: Squid and every local user
 * share 127.0.0.1, and users filling that address's places must not close Squid's open connections' way
 * back in, nor count against them. Squid is told perAddress as Max-Connections, so even its new connections,
 * unproven until their first REQMOD, never exceed the per-address cap on their own. Counted in an Int32Array
 * that may sit on a SharedArrayBuffer held by every thread listening on the port (workers.ts): an atomic add
 * either stays within its limit or is undone, so the limits hold for all threads together.
 *
 * Addresses are counted in BUCKETS buckets chosen by a hash with a random seed (per serve run), not one by
 * one: a table shared between threads has a fixed size. Two addresses share a count only by chance (1 in
 * BUCKETS) and are then refused a little early; the total still holds exactly.
 */
export interface ConnectionSlots {
  /** Take one for a connection from `address`, or say which limit refuses it. */
  take(address: string): Slot | { refused: 'total' | 'address' };
  /** Connections open now, in all. */
  readonly used: number;
}

export interface Slot {
  /** Give the place back (once; later calls do nothing). */
  give(): void;
  /**
   * The connection has proved it is the trusted client's (Squid's key, see server.ts): it gives back its place
   * among its address's and keeps only its place in the total (once; later calls do nothing).
   */
  prove(): void;
}

const BUCKETS = 4096;
/** [0]: connections open in all; [1]: the seed; then one count per bucket. */
const FIRST_BUCKET = 2;

/**
 * A counter for sharedSlots, on a SharedArrayBuffer so that worker threads can be handed it. `seed`: for
 * tests, whose addresses must land in buckets of their own every time; random otherwise.
 */
export function slotCounter(seed = crypto.getRandomValues(new Int32Array(1))[0] ?? 0): Int32Array {
  const counter = new Int32Array(new SharedArrayBuffer((FIRST_BUCKET + BUCKETS) * 4));
  counter[1] = seed;
  return counter;
}

export function sharedSlots(counter: Int32Array, max: number, perAddress: number): ConnectionSlots {
  if (counter.length !== FIRST_BUCKET + BUCKETS) throw new Error('sharedSlots: a counter from slotCounter()');
  const seed = counter[1] ?? 0;
  return {
    take: (address) => {
      if (Atomics.add(counter, 0, 1) >= max) {
        Atomics.sub(counter, 0, 1);
        return { refused: 'total' };
      }
      const bucket = FIRST_BUCKET + bucketOf(seed, addressGroup(address));
      if (Atomics.add(counter, bucket, 1) >= perAddress) {
        Atomics.sub(counter, bucket, 1);
        Atomics.sub(counter, 0, 1);
        return { refused: 'address' };
      }
      let given = false;
      let proven = false;
      return {
        give: () => {
          if (given) return;
          given = true;
          if (!proven) Atomics.sub(counter, bucket, 1);
          Atomics.sub(counter, 0, 1);
        },
        prove: () => {
          if (proven || given) return;
          proven = true;
          Atomics.sub(counter, bucket, 1);
        },
      };
    },
    get used() {
      return Atomics.load(counter, 0);
    },
  };
}

/** FNV-1a over the address's UTF-16 units, started from the seed: linear in an address (at most 45 characters). */
function bucketOf(seed: number, group: string): number {
  let hash = (seed ^ 0x811c9dc5) >>> 0;
  for (let i = 0; i < group.length; i++) {
    hash ^= group.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % BUCKETS;
}
