import { FAST_BUCKETS } from './buckets.ts';
import { everySeries, SlotCounter, SlotHistogram } from './fixed.ts';
import { family } from './registry.ts';

/**
 * The captive portal's ICAP answers, from serve's thread or the ICAP threads (summed into one series when
 * scraped): 204 (let through unchanged), unmodified (the request sent back as it was, for a Squid that does
 * not allow 204), 302 (to the splash page), 511 (the portal's own page), other_http (another HTTP answer),
 * options, error (an ICAP 4xx or 5xx: a malformed request, an unknown service, our failure).
 */
export const ICAP_ANSWERS = ['204', 'unmodified', '302', '511', 'other_http', 'options', 'error'] as const;
export type IcapAnswer = (typeof ICAP_ANSWERS)[number];

const SERIES = everySeries({ answer: ICAP_ANSWERS });

// Counted on every ICAP request (a page load of every intercepted client): in fixed slots (fixed.ts), no label
// key built per request.
const icap = family((registry) => ({
  answers: new SlotCounter(registry, {
    name: 'doorman_icap_answers_total',
    help: 'ICAP answers to Squid, by answer: 204, unmodified, 302 (splash redirect), 511, other_http, options, error.',
    series: SERIES,
  }),
  seconds: new SlotHistogram(registry, {
    name: 'doorman_icap_duration_seconds',
    help: 'Time from an ICAP request read to its answer (the decision), by answer.',
    series: SERIES,
    buckets: FAST_BUCKETS,
  }),
}));

/** One answer; `seconds` undefined for a request that never reached a decision (malformed, timed out). */
export function countIcap(answer: IcapAnswer, seconds?: number): void {
  const m = icap();
  const slot = ICAP_ANSWERS.indexOf(answer);
  m.answers.inc(slot);
  if (seconds !== undefined) m.seconds.observe(slot, seconds);
}

/** The answer label of an HTTP status sent back through ICAP. */
export function icapHttpAnswer(status: number): IcapAnswer {
  return status === 302 ? '302' : status === 511 ? '511' : 'other_http';
}

export function icapMetrics(): void {
  icap();
}
