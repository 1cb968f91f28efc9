import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { metricsSocketPath, readAuthdMetrics } from '../helpers/authd/metrics-socket.ts';
import type { Config } from '../lib/config/schema.ts';
import { readSecretFile } from '../lib/fs/secret-file.ts';
import { authdSupervisionMetrics, authdUp } from '../lib/metrics/authd.ts';
import { directoryMetrics } from '../lib/metrics/directory.ts';
import { metricsEndpoint } from '../lib/metrics/endpoint.ts';
import { mergeMetrics, type MetricsJson } from '../lib/metrics/gather.ts';
import { icapMetrics } from '../lib/metrics/icap.ts';
import { metricsServed, processRegistry } from '../lib/metrics/registry.ts';
import { sessionMetrics } from '../lib/metrics/sessions.ts';
import { storeMetrics } from '../lib/metrics/store.ts';
import { webMetrics } from '../lib/metrics/web.ts';
import type { Store } from '../lib/store/store.ts';

/**
 * serve's side of the metrics (docs/metrics.md): its own registry, and the one scrape that gathers the whole
 * box: serve's series, its ICAP threads' (over their message ports) and authd's (over
 * <stateDir>/authd-metrics.sock; authd down or restarting: doorman_authd_up 0 and the rest still answered).
 *
 * Served on a listener of its own (metrics.listen: GET /metrics and {baseUrl}metrics), and, with a token file,
 * on the web app's listeners at {baseUrl}metrics too; never there without one.
 */
export interface ServeMetricsOptions {
  log: (line: string) => void;
  /** The ICAP threads' metrics (none without threads). */
  icapThreads: () => Promise<MetricsJson[]>;
  /** The store serve has open now, if any. */
  store: () => Store | undefined;
}

export interface ServeMetrics {
  /** Where its own listener is (host:port), if it has one. */
  readonly where: string | undefined;
  /** The web app's request for {baseUrl}metrics (token set): answered here, true; any other: false. */
  onWebApp(req: IncomingMessage, res: ServerResponse): boolean;
  close(): Promise<void>;
}

export async function startMetrics(config: Config, options: ServeMetricsOptions): Promise<ServeMetrics> {
  const { log } = options;
  const registry = processRegistry('serve', { defaults: metricsServed(config.metrics) });
  webMetrics();
  icapMetrics();
  directoryMetrics();
  authdSupervisionMetrics();
  sessionMetrics((source) => options.store()?.sessions.countBySource([source]));
  storeMetrics({ process: 'serve', status: () => options.store()?.status() });
  const authdSocket = metricsSocketPath(config.stateDir);
  const gather = async () => {
    const [authd, threads] = await Promise.all([readAuthdMetrics(authdSocket), options.icapThreads()]);
    authdUp(authd !== undefined);
    const own = await registry.getMetricsAsJSON();
    return mergeMetrics([own, ...threads, ...(authd === undefined ? [] : [authd])]);
  };
  const { tokenFile, listen } = config.metrics;
  const token = tokenFile === null ? undefined : () => readSecretFile(tokenFile, 'the metrics token file');
  const webPath = `${new URL(config.baseUrl).pathname}metrics`;
  const endpoint = (paths: string[]) => metricsEndpoint({ paths, gather, log, ...(token && { token }) });

  const onWebApp =
    token === undefined
      ? () => false
      : (() => {
          const answer = endpoint([webPath]);
          return (req: IncomingMessage, res: ServerResponse) => {
            if ((req.url ?? '').split('?')[0] !== webPath) return false;
            answer(req, res);
            return true;
          };
        })();
  if (listen === null) return { where: undefined, onWebApp, close: () => Promise.resolve() };

  const server = createServer(endpoint([...new Set(['/metrics', webPath])]));
  // A scrape is one short request: a connection left idle is not kept for long.
  server.keepAliveTimeout = 5000;
  server.requestTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: Error) =>
      reject(new Error(`cannot listen on ${hostPort(listen.host, listen.port)} (metrics): ${error.message}`)),
    );
    server.listen(listen.port, listen.host, () => resolve());
  });
  return {
    where: hostPort(listen.host, listen.port),
    onWebApp,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** `host:port`, an IPv6 address in brackets. */
export function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
