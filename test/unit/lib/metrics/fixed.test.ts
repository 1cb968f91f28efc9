import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { everySeries, SlotCounter, SlotHistogram } from '../../../../lib/metrics/fixed.ts';

describe('SlotCounter and SlotHistogram', () => {
  it('write what prom-client writes for its own counter and histogram: every series at 0 from the start', async () => {
    const registry = new Registry();
    const series = everySeries({ kind: ['a', 'b'], answer: ['OK', 'ERR'] });
    const counter = new SlotCounter(registry, { name: 'x_total', help: 'X.', series });
    const histogram = new SlotHistogram(registry, {
      name: 'x_seconds',
      help: 'Y.',
      series,
      buckets: [0.1, 1],
    });
    counter.inc(1);
    counter.inc(1);
    counter.inc(2, 5);
    histogram.observe(1, 0.05);
    histogram.observe(1, 0.1);
    histogram.observe(1, 0.5);
    histogram.observe(1, 7);
    const text = await registry.metrics();
    expect(text).toContain(
      [
        '# HELP x_total X.',
        '# TYPE x_total counter',
        'x_total{kind="a",answer="OK"} 0',
        'x_total{kind="a",answer="ERR"} 2',
        'x_total{kind="b",answer="OK"} 5',
        'x_total{kind="b",answer="ERR"} 0',
      ].join('\n'),
    );
    expect(text).toContain(
      [
        'x_seconds_bucket{kind="a",answer="ERR",le="0.1"} 2',
        'x_seconds_bucket{kind="a",answer="ERR",le="1"} 3',
        'x_seconds_bucket{kind="a",answer="ERR",le="+Inf"} 4',
        'x_seconds_sum{kind="a",answer="ERR"} 7.65',
        'x_seconds_count{kind="a",answer="ERR"} 4',
      ].join('\n'),
    );
    expect(text).toContain('x_seconds_count{kind="b",answer="ERR"} 0');
    expect(histogram.count(1)).toBe(4);
  });

  it('everySeries lists every combination, the first label slowest', () => {
    expect(everySeries({ a: ['1', '2'], b: ['x', 'y'] })).toEqual([
      { a: '1', b: 'x' },
      { a: '1', b: 'y' },
      { a: '2', b: 'x' },
      { a: '2', b: 'y' },
    ]);
  });
});
