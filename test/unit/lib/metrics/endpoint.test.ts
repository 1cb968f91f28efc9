import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  bearerMatches,
  metricsEndpoint,
  type MetricsEndpointOptions,
} from '../../../../lib/metrics/endpoint.ts';
import { http } from '../../../harness/http.ts';

let server: Server | undefined;
const closeServer = async () => {
  const open = server;
  server = undefined;
  if (open !== undefined) await new Promise((resolve) => open.close(resolve));
};
afterEach(closeServer);

async function serve(options: Partial<MetricsEndpointOptions>): Promise<{ url: string; logged: string[] }> {
  const logged: string[] = [];
  server = createServer(
    metricsEndpoint({
      paths: ['/metrics', '/doorman/metrics'],
      gather: () => Promise.resolve('x_total 1\n'),
      log: (line) => logged.push(line),
      ...options,
    }),
  );
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server?.address() as AddressInfo).port}`, logged };
}

describe('metricsEndpoint', () => {
  it('answers GET on its paths in the text format, 404 elsewhere, 405 for another method', async () => {
    const { url } = await serve({});
    const res = await http(`${url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.body).toBe('x_total 1\n');
    expect((await http(`${url}/doorman/metrics?x=1`)).status).toBe(200);
    expect((await http(`${url}/other`)).status).toBe(404);
    const post = await http(`${url}/metrics`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
  });

  it('with a token: 401 with WWW-Authenticate without it or with another, 200 with it', async () => {
    const { url } = await serve({ token: () => 's3cret' });
    const none = await http(`${url}/metrics`);
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer realm="doorman metrics"');
    expect(none.body).not.toContain('x_total');
    expect((await http(`${url}/metrics`, { headers: { authorization: 'Bearer s3cre' } })).status).toBe(401);
    expect((await http(`${url}/metrics`, { headers: { authorization: 'Basic s3cret' } })).status).toBe(401);
    const ok = await http(`${url}/metrics`, { headers: { authorization: 'Bearer s3cret' } });
    expect(ok.status).toBe(200);
  });

  it('a token that cannot be read is 500 and a log line, never an open door; an empty one matches nothing', async () => {
    const { url, logged } = await serve({
      token: () => {
        throw new Error('/etc/doorman/token: ENOENT');
      },
    });
    expect((await http(`${url}/metrics`, { headers: { authorization: 'Bearer x' } })).status).toBe(500);
    expect(logged).toEqual(['metrics: cannot read the token file: /etc/doorman/token: ENOENT']);
    await closeServer();
    const empty = await serve({ token: () => '' });
    expect((await http(`${empty.url}/metrics`, { headers: { authorization: 'Bearer ' } })).status).toBe(401);
  });

  it('a failed gathering is 500 and a log line', async () => {
    const { url, logged } = await serve({ gather: () => Promise.reject(new Error('boom')) });
    expect((await http(`${url}/metrics`)).status).toBe(500);
    expect(logged).toEqual(['metrics: gathering failed: boom']);
  });
});

describe('bearerMatches', () => {
  it.each([
    ['Bearer abc', true],
    ['bearer abc', true],
    ['Bearer  abc ', true],
    ['Bearer abcd', false],
    ['Bearer ab', false],
    ['Bearer', false],
    ['abc', false],
    [undefined, false],
  ])('%s → %s', (header, expected) => {
    expect(bearerMatches(header, 'abc')).toBe(expected);
  });
});
