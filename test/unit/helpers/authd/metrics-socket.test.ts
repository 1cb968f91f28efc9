import { existsSync, lstatSync, renameSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  metricsSocketPath,
  readAuthdMetrics,
  serveMetricsSocket,
} from '../../../../helpers/authd/metrics-socket.ts';
import { useTempDir } from '../../../support/temp-dir.ts';

const temp = useTempDir();
const registry = () => {
  const r = new Registry();
  new Counter({ name: 'x_total', help: 'X.', registers: [r] }).inc(3);
  return r;
};
/** A socket at `path` that answers every connection with `text` (a stand-in for something else there). */
async function answering(path: string, text: string | Buffer): Promise<() => Promise<void>> {
  const server = createServer((socket) => {
    socket.on('error', () => {});
    socket.end(text);
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return () => new Promise((resolve) => server.close(() => resolve()));
}

describe("authd's metrics socket", () => {
  it('is <stateDir>/authd-metrics.sock, 0600, and answers each connection with the registry as JSON', async () => {
    const path = metricsSocketPath(temp.dir);
    expect(path).toBe(join(temp.dir, 'authd-metrics.sock'));
    const socket = await serveMetricsSocket(path, registry(), () => {});
    expect(lstatSync(path).mode & 0o777).toBe(0o600);
    const got = await readAuthdMetrics(path);
    expect(got?.map((m) => [m.name, m.values[0]?.value])).toEqual([['x_total', 3]]);
    expect(await readAuthdMetrics(path)).toEqual(got);
    await socket.close();
    expect(existsSync(path)).toBe(false);
  });

  it('takes over a socket file left by an earlier authd', async () => {
    const path = metricsSocketPath(temp.dir);
    // A socket file nobody listens on: its server closed while the file was elsewhere (closing unlinks it).
    const stop = await answering(path, '[]');
    renameSync(path, `${path}.aside`);
    await stop();
    renameSync(`${path}.aside`, path);
    expect(lstatSync(path).isSocket()).toBe(true);
    const socket = await serveMetricsSocket(path, registry(), () => {});
    expect((await readAuthdMetrics(path))?.length).toBe(1);
    await socket.close();
  });

  it("leaves a successor's file in place when it closes", async () => {
    const path = metricsSocketPath(temp.dir);
    const first = await serveMetricsSocket(path, registry(), () => {});
    const second = await serveMetricsSocket(path, registry(), () => {});
    await Promise.race([first.close(), new Promise((resolve) => setTimeout(resolve, 100))]);
    expect((await readAuthdMetrics(path))?.length).toBe(1);
    await second.close();
  });

  it('reads undefined when nobody listens, when the answer is not metrics, or is too long, or does not come', async () => {
    const path = metricsSocketPath(temp.dir);
    expect(await readAuthdMetrics(path)).toBeUndefined();
    let stop = await answering(path, '{"not":"a list"}');
    expect(await readAuthdMetrics(path)).toBeUndefined();
    await stop();
    stop = await answering(path, Buffer.alloc(5 * 1024 * 1024, 0x20));
    expect(await readAuthdMetrics(path)).toBeUndefined();
    await stop();
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(path, resolve));
    const started = Date.now();
    expect(await readAuthdMetrics(path, 200)).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(2000);
    silent.close();
  });
});
