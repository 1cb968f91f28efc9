import type { HelperReply, HelperRequest, HelperResult } from '../helper-protocol/message.ts';
import { FAST_BUCKETS, secondsSince } from './buckets.ts';
import { everySeries, SlotCounter, SlotHistogram } from './fixed.ts';
import { family } from './registry.ts';

/**
 * Squid's lookups answered by authd (session, basic, group: the helpers behind external ACLs and Basic), by
 * kind and answer. Counted on the lookup path itself, so without labels built per call: a slot per kind and
 * answer (fixed.ts).
 */
export const LOOKUP_KINDS = ['session', 'basic', 'group'] as const;
export type LookupKind = (typeof LOOKUP_KINDS)[number];
const RESULTS: readonly HelperResult[] = ['OK', 'ERR', 'BH'];

const SERIES = everySeries({ kind: LOOKUP_KINDS, answer: RESULTS });

const lookups = family((registry) => ({
  total: new SlotCounter(registry, {
    name: 'doorman_lookups_total',
    help: "Squid's lookups answered by authd, by helper kind and answer (OK identified or allowed, ERR not, BH Doorman's own failure).",
    series: SERIES,
  }),
  seconds: new SlotHistogram(registry, {
    name: 'doorman_lookup_duration_seconds',
    help: "Time authd took to answer one of Squid's lookups, from reading it to its answer, by kind and answer.",
    series: SERIES,
    buckets: FAST_BUCKETS,
  }),
}));

/** The slot of a kind's answer: `lookupSlot(kind) + resultOffset(result)`. */
export function lookupSlot(kind: LookupKind): number {
  return LOOKUP_KINDS.indexOf(kind) * RESULTS.length;
}

export function resultOffset(result: HelperResult): number {
  return result === 'OK' ? 0 : result === 'ERR' ? 1 : 2;
}

/** One answered lookup. */
export function countLookup(slot: number, seconds: number): void {
  const m = lookups();
  m.total.inc(slot);
  m.seconds.observe(slot, seconds);
}

/** The lookup metrics made now (present at 0 in the first scrape). */
export function lookupMetrics(): void {
  lookups();
}

type Handle = (request: HelperRequest) => HelperReply | Promise<HelperReply>;

/**
 * A helper's `handle`, each answer counted under `kind`: OK, ERR, or BH (a thrown error or a rejected answer
 * is runHelper's BH, counted so here). A synchronous answer stays synchronous. `uncounted`: requests that are
 * not Squid's (serve's liveness probe, every second), answered but not counted.
 */
export function countedHandle(
  kind: LookupKind,
  handle: Handle,
  uncounted: (request: HelperRequest) => boolean = () => false,
): Handle {
  const base = lookupSlot(kind);
  return (request) => {
    if (uncounted(request)) return handle(request);
    const started = performance.now();
    let answer: HelperReply | Promise<HelperReply>;
    try {
      answer = handle(request);
    } catch (error) {
      countLookup(base + 2, secondsSince(started));
      throw error;
    }
    if (!(answer instanceof Promise)) {
      countLookup(base + resultOffset(answer.result), secondsSince(started));
      return answer;
    }
    return answer.then(
      (reply) => {
        countLookup(base + resultOffset(reply.result), secondsSince(started));
        return reply;
      },
      (error: unknown) => {
        countLookup(base + 2, secondsSince(started));
        throw error;
      },
    );
  };
}
