import type { Metric, MetricValueWithName, Registry } from 'prom-client';

/**
 * Counters and histograms for the lookup path, where prom-client's own would build a label key (a string) on
 * every call: here every series (one set of label values) is made once, at start, and is a slot number; a
 * count is `counts[slot]++`, a latency a walk over a dozen bucket bounds, with nothing allocated. prom-client
 * still writes the text format: these are registered as metrics of its registry and give it their values when
 * scraped (get()), in the shape its own Counter and Histogram give.
 */
export type SeriesLabels = Readonly<Record<string, string>>;

interface Described {
  name: string;
  help: string;
  /** Every series this metric will have, each present (at 0) from the start. */
  series: readonly SeriesLabels[];
}

/** What prom-client's own metrics give when scraped (its typings call the type an enum; it is the word). */
interface Values {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  values: Array<MetricValueWithName<string>>;
}

/** A counter whose series are fixed slots. */
export class SlotCounter {
  readonly counts: Float64Array;
  readonly #described: Described;

  constructor(registry: Registry, described: Described) {
    this.#described = described;
    this.counts = new Float64Array(described.series.length);
    register(registry, described.name, () => this.#values());
  }

  inc(slot: number, by = 1): void {
    this.counts[slot] = (this.counts[slot] ?? 0) + by;
  }

  #values(): Values {
    const { name, help, series } = this.#described;
    return {
      name,
      help,
      type: 'counter',
      aggregator: 'sum',
      values: series.map((labels, i) => ({ labels: { ...labels }, value: this.counts[i] ?? 0 })),
    };
  }
}

/** A histogram (seconds) whose series are fixed slots and whose buckets are fixed upper bounds. */
export class SlotHistogram {
  readonly #described: Described;
  readonly #bounds: Float64Array;
  /** Per series: one count per bound (not cumulative; summed when scraped), then +Inf. */
  readonly #buckets: Float64Array;
  readonly #sums: Float64Array;
  readonly #counts: Float64Array;

  constructor(registry: Registry, described: Described & { buckets: readonly number[] }) {
    this.#described = described;
    this.#bounds = Float64Array.from(described.buckets);
    this.#buckets = new Float64Array(described.series.length * (described.buckets.length + 1));
    this.#sums = new Float64Array(described.series.length);
    this.#counts = new Float64Array(described.series.length);
    register(registry, described.name, () => this.#values());
  }

  /** `times` observations of `seconds` each (default one). */
  observe(slot: number, seconds: number, times = 1): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && seconds > (bounds[i] ?? Infinity)) i++;
    const at = slot * (bounds.length + 1) + i;
    this.#buckets[at] = (this.#buckets[at] ?? 0) + times;
    this.#sums[slot] = (this.#sums[slot] ?? 0) + seconds * times;
    this.#counts[slot] = (this.#counts[slot] ?? 0) + times;
  }

  /** How many were observed in a series (tests, and the bench's check that the path was taken). */
  count(slot: number): number {
    return this.#counts[slot] ?? 0;
  }

  #values(): Values {
    const { name, help, series } = this.#described;
    const width = this.#bounds.length + 1;
    const values: Array<MetricValueWithName<string>> = [];
    series.forEach((labels, slot) => {
      let cumulative = 0;
      for (let i = 0; i < width; i++) {
        cumulative += this.#buckets[slot * width + i] ?? 0;
        const le = i < this.#bounds.length ? (this.#bounds[i] ?? 0) : '+Inf';
        values.push({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: cumulative });
      }
      values.push({ metricName: `${name}_sum`, labels: { ...labels }, value: this.#sums[slot] ?? 0 });
      values.push({ metricName: `${name}_count`, labels: { ...labels }, value: this.#counts[slot] ?? 0 });
    });
    return { name, help, type: 'histogram', aggregator: 'sum', values };
  }
}

/**
 * Into the registry as a metric of its own: the registry asks only for the name and get() (and the type when
 * merging); prom-client's Metric type lists its own classes, so this object is given as one.
 */
function register(registry: Registry, name: string, values: () => Values): void {
  const metric = { name, get: () => Promise.resolve(values()) };
  registry.registerMetric(metric as unknown as Metric);
}

/** Every combination of the given label values, in order (the first label varies slowest). */
export function everySeries(labels: Readonly<Record<string, readonly string[]>>): SeriesLabels[] {
  let series: Array<Record<string, string>> = [{}];
  for (const [name, values] of Object.entries(labels))
    series = series.flatMap((s) => values.map((v) => ({ ...s, [name]: v })));
  return series;
}
