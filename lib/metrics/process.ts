import { Counter, Gauge, type Registry } from 'prom-client';
import type { MetricsProcess } from './registry.ts';

/**
 * Each Doorman process's memory and CPU, labelled with the process (serve, authd), read only when scraped.
 * Not prom-client's default metrics: those keep observers running between scrapes (every GC, the event loop
 * sampled every 10 ms), which measurably cost authd's lookups (bench/README.md, "Metrics"); these cost nothing
 * until asked. The names are Prometheus' own (process_*, nodejs_*), so dashboards made for them work.
 */
export function processMetrics(registry: Registry, process: MetricsProcess): void {
  const labels = { process };
  const started = Date.now() / 1000 - globalThis.process.uptime();
  const gauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['process'],
      registers: [registry],
      collect() {
        this.set(labels, read());
      },
    });
  const cpu = (name: string, help: string, read: (usage: NodeJS.CpuUsage) => number) =>
    new Counter({
      name,
      help,
      labelNames: ['process'],
      registers: [registry],
      collect() {
        this.reset();
        this.inc(labels, read(globalThis.process.cpuUsage()) / 1e6);
      },
    });
  gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', () =>
    globalThis.process.memoryUsage.rss(),
  );
  gauge(
    'process_start_time_seconds',
    'Start time of the process since unix epoch in seconds.',
    () => started,
  );
  gauge(
    'nodejs_heap_size_used_bytes',
    'V8 heap in use, bytes.',
    () => globalThis.process.memoryUsage().heapUsed,
  );
  gauge(
    'nodejs_heap_size_total_bytes',
    'V8 heap allocated, bytes.',
    () => globalThis.process.memoryUsage().heapTotal,
  );
  gauge(
    'nodejs_external_memory_bytes',
    'Memory of C++ objects bound to JavaScript objects (buffers), bytes.',
    () => globalThis.process.memoryUsage().external,
  );
  cpu('process_cpu_user_seconds_total', 'User CPU time spent in seconds.', (u) => u.user);
  cpu('process_cpu_system_seconds_total', 'System CPU time spent in seconds.', (u) => u.system);
}
