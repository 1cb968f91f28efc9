import { Gauge, Histogram } from 'prom-client';
import type { StoreStatus } from '../store/store.ts';
import { SLOW_BUCKETS } from './buckets.ts';
import { family, type MetricsProcess } from './registry.ts';

/**
 * The store, seen from serve: connected, and on PostgreSQL how stale this process's replica is and how far
 * the server connected to lags its primary; and the time each write (a group commit) took, in every process
 * that writes.
 */
export type StoreStatusRead = () => Promise<StoreStatus> | undefined;

let storeStatus: StoreStatusRead = () => undefined;

/** The status read once per scrape, however many gauges ask for it. */
let read: { at: number; status: Promise<StoreStatus | undefined> } | undefined;
const statusNow = (): Promise<StoreStatus | undefined> => {
  const now = Date.now();
  if (read === undefined || now - read.at > 1000)
    read = { at: now, status: storeStatus()?.catch(() => undefined) ?? Promise.resolve(undefined) };
  return read.status;
};

const store = family((registry) => {
  new Gauge({
    name: 'doorman_store_connected',
    help: 'Whether serve reaches its store now (1) or not (0), by engine (sqlite, postgres).',
    labelNames: ['engine'],
    registers: [registry],
    async collect() {
      this.reset();
      const status = await statusNow();
      if (status !== undefined) this.set({ engine: status.engine }, status.connected ? 1 : 0);
    },
  });
  const postgres = (name: string, help: string, pick: 'staleMs' | 'replicationLagMs') =>
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect() {
        this.reset();
        const ms = (await statusNow())?.[pick];
        if (ms !== undefined) this.set(ms / 1000);
      },
    });
  postgres(
    'doorman_store_stale_seconds',
    "PostgreSQL: how long since serve's copy of the shared tables last caught up with the database.",
    'staleMs',
  );
  postgres(
    'doorman_store_replication_lag_seconds',
    'PostgreSQL: how far the server serve is connected to lags its primary (0 on the primary).',
    'replicationLagMs',
  );
  const writes = new Histogram({
    name: 'doorman_store_write_duration_seconds',
    help: 'Time one write transaction (a group commit: the writes of one turn together) took to commit, by process.',
    labelNames: ['process'],
    buckets: [...SLOW_BUCKETS],
    registers: [registry],
  });
  return { writes };
});

let writer: MetricsProcess = 'serve';

export function observeWrite(seconds: number): void {
  store().writes.observe({ process: writer }, seconds);
}

/** Where the store's status comes from (serve's open store), and which process this is for write times. */
export function storeMetrics(options: { status?: StoreStatusRead; process: MetricsProcess }): void {
  if (options.status !== undefined) storeStatus = options.status;
  writer = options.process;
  store();
}
