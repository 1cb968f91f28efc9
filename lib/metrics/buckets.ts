/**
 * Latency buckets, seconds. A lookup answered from memory takes microseconds and one that reads the DB or the
 * directory milliseconds; a web request or a directory bind takes milliseconds to a few seconds.
 */
export const FAST_BUCKETS = [
  0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5,
] as const;
export const SLOW_BUCKETS = [
  0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
] as const;

/** Seconds since `started` (performance.now() milliseconds). */
export function secondsSince(started: number): number {
  return (performance.now() - started) / 1000;
}
