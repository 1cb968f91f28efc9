import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';

export interface GcPauses {
  count: number;
  total_ms: number;
  /** The longest pause of any kind, and of a full (mark-compact) collection, ms. */
  max_ms: number;
  major_max_ms: number;
}

/**
 * This process's garbage-collection pauses from now until stop() (perf_hooks' gc entries): a process holding
 * a million sessions pauses for its full collections, and every answer it owes waits meanwhile.
 */
export function watchGc(): { stop(): GcPauses } {
  const pauses: GcPauses = { count: 0, total_ms: 0, max_ms: 0, major_max_ms: 0 };
  const add = (entries: readonly PerformanceEntry[]): void => {
    for (const entry of entries) {
      pauses.count++;
      pauses.total_ms += entry.duration;
      pauses.max_ms = Math.max(pauses.max_ms, entry.duration);
      const kind = (entry as { detail?: { kind?: number } | null }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MAJOR)
        pauses.major_max_ms = Math.max(pauses.major_max_ms, entry.duration);
    }
  };
  const observer = new PerformanceObserver((list) => add(list.getEntries()));
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop() {
      add(observer.takeRecords()); // the entries not delivered yet
      observer.disconnect();
      const round = (ms: number) => Math.round(ms * 10) / 10;
      return {
        count: pauses.count,
        total_ms: round(pauses.total_ms),
        max_ms: round(pauses.max_ms),
        major_max_ms: round(pauses.major_max_ms),
      };
    },
  };
}
