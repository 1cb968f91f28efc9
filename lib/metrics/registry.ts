import { Registry } from 'prom-client';
import { processMetrics } from './process.ts';

/**
 * Where metrics are kept: one prom-client Registry per Doorman process or thread (serve, each ICAP worker
 * thread, authd), gathered by serve into one scrape (gather.ts). The registry is the process's current one, set
 * once at start (useMetricsRegistry) and replaceable in tests; each family of metrics (lookups.ts, web.ts, ...)
 * is made on the current registry the first time it is used after the registry changed, so an instrumentation
 * point is one call (`countLogin('api')`) with nothing passed down to it.
 */

/** The bounded `process` label of per-process metrics (memory, CPU, event loop). */
export const METRICS_PROCESSES = ['serve', 'authd', 'icap'] as const;
export type MetricsProcess = (typeof METRICS_PROCESSES)[number];

let current = new Registry();
let generation = 0;

/**
 * Whether anything will scrape: a listener of its own or a token for the web app's. Off, the processes still
 * count (a few additions), and authd opens no socket for it.
 */
export function metricsServed(metrics: { listen: unknown; tokenFile: unknown }): boolean {
  return metrics.listen !== null || metrics.tokenFile !== null;
}

/** The registry this process's metrics go to now. */
export function metricsRegistry(): Registry {
  return current;
}

/** Make `registry` this process's (a test's own, or the one made at start); later metrics go there. */
export function useMetricsRegistry(registry: Registry): Registry {
  current = registry;
  generation++;
  return registry;
}

/**
 * A registry for this process, made current. `defaults`: its memory and CPU (process.ts), labelled with the
 * process; not in an ICAP thread, whose process is serve's.
 */
export function processRegistry(process: MetricsProcess, options: { defaults: boolean }): Registry {
  const registry = new Registry();
  if (options.defaults) processMetrics(registry, process);
  return useMetricsRegistry(registry);
}

/**
 * A family of metrics made on the current registry on first use, and again after the registry changed: the
 * family's functions call `get()` (a compare and a return on every call after the first).
 */
export function family<T>(make: (registry: Registry) => T): () => T {
  let madeFor = -1;
  let made: T | undefined;
  return () => {
    if (madeFor !== generation || made === undefined) {
      made = make(current);
      madeFor = generation;
    }
    return made;
  };
}
