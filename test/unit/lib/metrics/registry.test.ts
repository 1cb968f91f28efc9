import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  family,
  metricsRegistry,
  processRegistry,
  useMetricsRegistry,
} from '../../../../lib/metrics/registry.ts';

describe('the current registry and families', () => {
  it('a family is made once per registry, and again on the next one', async () => {
    let made = 0;
    const counter = family((registry) => {
      made++;
      return new Counter({ name: 'x_total', help: 'X.', registers: [registry] });
    });
    const first = useMetricsRegistry(new Registry());
    counter().inc();
    counter().inc();
    const second = useMetricsRegistry(new Registry());
    counter().inc();
    expect(made).toBe(2);
    expect(await first.metrics()).toContain('x_total 2');
    expect(await second.metrics()).toContain('x_total 1');
    expect(metricsRegistry()).toBe(second);
  });

  it("a process registry has the process's memory labelled with it, and no gauge named like a counter", async () => {
    const registry = processRegistry('authd', { defaults: true });
    const text = await registry.metrics();
    expect(text).toMatch(/^process_resident_memory_bytes\{process="authd"\} \d+/m);
    expect(text).not.toContain('nodejs_active_handles_total');
    expect(await processRegistry('icap', { defaults: false }).metrics()).toBe('\n');
  });
});
