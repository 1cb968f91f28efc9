import { chmodSync, lstatSync, unlinkSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { Registry } from 'prom-client';
import type { Log } from '../../lib/log.ts';
import { MAX_METRICS_JSON_BYTES, parseMetricsJson, type MetricsJson } from '../../lib/metrics/gather.ts';

/**
 * authd's metrics for serve's scrape: `<stateDir>/authd-metrics.sock` (0600: serve and authd are the same
 * service user). In stateDir, which is the service user's, not in run/, which systemd's socket unit may have
 * made as root's (its sockets are handed over; this one is authd's own). A connection is answered with the registry's metrics as JSON (prom-client's
 * getMetricsAsJSON), then closed; nothing is read from it. The protocol is that one document, so serve merges
 * authd's series with its own (lib/metrics/gather.ts) and one scrape sees the whole box.
 */
export function metricsSocketPath(stateDir: string): string {
  return join(stateDir, 'authd-metrics.sock');
}

export interface MetricsSocket {
  /** Stop answering. The file is left to a successor that has bound the path since (a SIGHUP restart). */
  close(): Promise<void>;
}

export async function serveMetricsSocket(path: string, registry: Registry, log: Log): Promise<MetricsSocket> {
  // A file left by an earlier authd (killed, or the predecessor of a restart): its scrapes are ours now.
  if (lstatSync(path, { throwIfNoEntry: false })?.isSocket() === true) unlinkSync(path);
  const server: Server = createServer((socket) => {
    socket.on('error', () => {});
    registry.getMetricsAsJSON().then(
      (json) => socket.end(JSON.stringify(json)),
      (error: unknown) => {
        log(`metrics: ${error instanceof Error ? error.message : String(error)}`);
        socket.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => resolve());
  });
  chmodSync(path, 0o600);
  const ino = lstatSync(path).ino;
  return {
    close: () =>
      new Promise<void>((resolve) => {
        // Node unlinks a Unix socket's path when its server closes: a successor's file is not ours to remove.
        if (lstatSync(path, { throwIfNoEntry: false })?.ino !== ino) return resolve();
        server.close(() => resolve());
      }),
  };
}

/** authd's metrics, or undefined if it does not answer within `timeoutMs` (stopped, restarting, stuck). */
export function readAuthdMetrics(path: string, timeoutMs = 2000): Promise<MetricsJson | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const socket = createConnection(path);
    const done = (value: MetricsJson | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.on('error', () => done(undefined));
    socket.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_METRICS_JSON_BYTES) return done(undefined);
      chunks.push(chunk);
    });
    socket.on('end', () => done(parseMetricsJson(Buffer.concat(chunks).toString('utf8'))));
  });
}
