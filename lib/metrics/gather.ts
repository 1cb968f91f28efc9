import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client';

/** One registry's metrics as prom-client gives them (getMetricsAsJSON), the form that crosses threads and sockets. */
export type MetricsJson = Array<MetricObjectWithValues<MetricValue<string>>>;

/** A cap on what another process may send for one scrape: a few hundred series are a few tens of KiB. */
export const MAX_METRICS_JSON_BYTES = 4 * 1024 * 1024;

/**
 * One scrape for the whole box: the metrics of serve, of its ICAP threads and of authd, merged into one
 * Prometheus text. A series in several parts (an ICAP counter of each thread) is summed; per-process ones differ
 * by their `process` label and stay apart. prom-client drops a metric whose aggregator is "omit"
 * (process_start_time_seconds) when merging: here each process's is its own series, so it is kept.
 */
export async function mergeMetrics(parts: readonly MetricsJson[]): Promise<string> {
  const kept = parts.map((part) =>
    part.map((metric) =>
      metric.aggregator === 'omit' ? { ...metric, aggregator: 'first' as const } : metric,
    ),
  );
  return AggregatorRegistry.aggregate(kept).metrics();
}

/**
 * Metrics sent by another process, checked for shape before use: a list of named metrics, each with values
 * of numbers and flat labels. Anything else is refused (undefined), never half used.
 */
export function parseMetricsJson(text: string): MetricsJson | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed)) return undefined;
  for (const metric of parsed as unknown[]) {
    if (typeof metric !== 'object' || metric === null) return undefined;
    const { name, help, type, aggregator, values } = metric as Record<string, unknown>;
    if (typeof name !== 'string' || typeof help !== 'string' || typeof type !== 'string') return undefined;
    if (typeof aggregator !== 'string' || !Array.isArray(values)) return undefined;
    for (const value of values as unknown[]) {
      if (typeof value !== 'object' || value === null) return undefined;
      const v = value as Record<string, unknown>;
      if (typeof v.value !== 'number' || typeof v.labels !== 'object' || v.labels === null) return undefined;
      if (v.metricName !== undefined && typeof v.metricName !== 'string') return undefined;
    }
  }
  return parsed as MetricsJson;
}
