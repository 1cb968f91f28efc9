import { Counter, Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { mergeMetrics, parseMetricsJson, type MetricsJson } from '../../../../lib/metrics/gather.ts';

/** A process's or thread's registry with one counter and one per-process gauge. */
async function part(process: string, answers: number): Promise<MetricsJson> {
  const registry = new Registry();
  new Counter({
    name: 'x_answers_total',
    help: 'Answers.',
    labelNames: ['answer'],
    registers: [registry],
  }).inc({ answer: '204' }, answers);
  const started = new Gauge({
    name: 'x_start_time_seconds',
    help: 'Start.',
    labelNames: ['process'],
    registers: [registry],
    aggregator: 'omit',
  });
  started.set({ process }, 1000 + answers);
  return registry.getMetricsAsJSON();
}

describe('mergeMetrics', () => {
  it("sums a series several parts have (ICAP threads' answers) and keeps each process's own apart", async () => {
    const text = await mergeMetrics([await part('serve', 2), await part('icap', 3)]);
    expect(text).toContain('x_answers_total{answer="204"} 5');
    // prom-client's own merge would drop an "omit" metric; each process's start time is its own.
    expect(text).toContain('x_start_time_seconds{process="serve"} 1002');
    expect(text).toContain('x_start_time_seconds{process="icap"} 1003');
  });
});

describe('parseMetricsJson', () => {
  it('takes what getMetricsAsJSON gives, through JSON', async () => {
    const json = await part('authd', 1);
    expect(parseMetricsJson(JSON.stringify(json))).toEqual(JSON.parse(JSON.stringify(json)));
  });

  it.each([
    ['not JSON', '{'],
    ['not a list', '{}'],
    ['a metric without a name', '[{"help":"h","type":"counter","aggregator":"sum","values":[]}]'],
    [
      'a value that is not a number',
      '[{"name":"x","help":"h","type":"counter","aggregator":"sum","values":[{"value":"1","labels":{}}]}]',
    ],
    [
      'values without labels',
      '[{"name":"x","help":"h","type":"counter","aggregator":"sum","values":[{"value":1}]}]',
    ],
  ])('refuses %s', (_, text) => {
    expect(parseMetricsJson(text)).toBeUndefined();
  });
});
