import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Registry } from 'prom-client';

/**
 * GET /metrics: the whole box's metrics (gather) in Prometheus' text format. With a token (metrics.tokenFile),
 * only for `Authorization: Bearer <token>`, compared in constant time; 401 with WWW-Authenticate otherwise.
 * The token is read at each request (`token()`), so a rotated file applies at the next scrape.
 */
export interface MetricsEndpointOptions {
  /** The paths answered (on its own listener /metrics and {baseUrl}metrics; on the web app's, the latter). */
  paths: readonly string[];
  gather: () => Promise<string>;
  /** The expected token, or undefined: none asked. Throws when the file cannot be read (answered 500). */
  token?: () => string;
  log: (line: string) => void;
}

export type MetricsEndpoint = (req: IncomingMessage, res: ServerResponse) => void;

const TEXT = { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' };

export function metricsEndpoint(options: MetricsEndpointOptions): MetricsEndpoint {
  const { log } = options;
  return (req, res) => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    if (!options.paths.includes(path)) return void res.writeHead(404, TEXT).end('not found\n');
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return void res.writeHead(405, { ...TEXT, allow: 'GET, HEAD' }).end('GET only\n');
    if (options.token !== undefined) {
      let expected: string;
      try {
        expected = options.token();
      } catch (error) {
        log(`metrics: cannot read the token file: ${error instanceof Error ? error.message : String(error)}`);
        return void res.writeHead(500, TEXT).end('the metrics token cannot be read; see the log\n');
      }
      if (expected === '' || !bearerMatches(req.headers.authorization, expected))
        return void res
          .writeHead(401, { ...TEXT, 'www-authenticate': 'Bearer realm="doorman metrics"' })
          .end('a bearer token is required\n');
    }
    options.gather().then(
      (text) =>
        res
          .writeHead(200, { 'content-type': Registry.PROMETHEUS_CONTENT_TYPE, 'cache-control': 'no-store' })
          .end(req.method === 'HEAD' ? undefined : text),
      (error: unknown) => {
        log(`metrics: gathering failed: ${error instanceof Error ? error.message : String(error)}`);
        res.writeHead(500, TEXT).end('gathering the metrics failed; see the log\n');
      },
    );
  };
}

/** `Bearer <token>` equal to `expected`; digests compared, so neither length nor content shows in the time. */
export function bearerMatches(header: string | undefined, expected: string): boolean {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  const given = match?.[1] ?? '';
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected)) && given !== '';
}
