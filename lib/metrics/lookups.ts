import type { HelperReply, HelperRequest, HelperResult } from '../helper-protocol/message.ts';
import type { HelperHandlers } from '../helper-protocol/run.ts';
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

/** `times` lookups answered with this slot's answer, each in `seconds`. */
export function countLookup(slot: number, seconds: number, times = 1): void {
  const m = lookups();
  m.total.inc(slot, times);
  m.seconds.observe(slot, seconds, times);
}

/** The lookup metrics made now (present at 0 in the first scrape). */
export function lookupMetrics(): void {
  lookups();
}

/**
 * A helper's handlers (runHelper's), each answer counted under `kind`: OK, ERR, or BH (a thrown error or a
 * rejected answer is runHelper's BH, counted so here). `uncounted`: requests that are not Squid's (serve's
 * liveness probe, every second), answered but not counted.
 *
 * The clock is read twice per batch, not per lookup (a clock read costs about as much as a cached answer): the
 * synchronous answers of one read leave together in one write when the batch ends (runHelper), so each waited
 * from the batch's start to its end, which is the latency observed for each of them. An asynchronous answer
 * (the directory, a DB retry) is timed on its own, from its request to its settling.
 */
export function countedHandlers(
  kind: LookupKind,
  handlers: HelperHandlers,
  uncounted: (request: HelperRequest) => boolean = () => false,
): HelperHandlers {
  const base = lookupSlot(kind);
  const answered = new Float64Array(RESULTS.length);
  let batchStarted = 0;
  const settled = (started: number) => ({
    ok: (reply: HelperReply) => {
      countLookup(base + resultOffset(reply.result), secondsSince(started));
      return reply;
    },
    failed: (error: unknown) => {
      countLookup(base + 2, secondsSince(started));
      throw error;
    },
  });
  return {
    beforeBatch: () => {
      batchStarted = performance.now();
      handlers.beforeBatch?.();
    },
    handle: (request) => {
      if (uncounted(request)) return handlers.handle(request);
      let answer: HelperReply | Promise<HelperReply>;
      try {
        answer = handlers.handle(request);
      } catch (error) {
        answered[2] = (answered[2] ?? 0) + 1;
        throw error;
      }
      if (!(answer instanceof Promise)) {
        const at = resultOffset(answer.result);
        answered[at] = (answered[at] ?? 0) + 1;
        return answer;
      }
      const done = settled(performance.now());
      return answer.then(done.ok, done.failed);
    },
    afterBatch: () => {
      // runHelper has written the batch's answers by now; what the service does after them is not theirs.
      let seconds = -1;
      for (let at = 0; at < answered.length; at++) {
        const times = answered[at] ?? 0;
        if (times === 0) continue;
        if (seconds < 0) seconds = secondsSince(batchStarted);
        countLookup(base + at, seconds, times);
        answered[at] = 0;
      }
      handlers.afterBatch?.();
    },
  };
}
