import type { RequestListener } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../../portal/server.ts';
import { sendTo } from './harness.ts';

const hello: RequestListener = (_req, res) => res.end('hi');
const app = { callback: () => hello };

let running: RunningServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

describe('startServer', () => {
  it('listens on every address given and reports the ports it got', async () => {
    running = await startServer(app, [
      { host: '127.0.0.1', port: 0 },
      { host: '::1', port: 0 },
    ]);
    expect(running.addresses.map((a) => a.host)).toEqual(['127.0.0.1', '::1']);
    for (const address of running.addresses) {
      expect(address.port).toBeGreaterThan(0);
      expect((await sendTo(address, { path: '/' })).text).toBe('hi');
    }
  });

  it('refuses headers over 16 KiB', async () => {
    running = await startServer(app, [{ host: '127.0.0.1', port: 0 }]);
    const target = running.addresses[0] ?? { host: '', port: 0 };
    expect((await sendTo(target, { path: '/', headers: { 'X-Big': 'x'.repeat(15_000) } })).status).toBe(200);
    expect((await sendTo(target, { path: '/', headers: { 'X-Big': 'x'.repeat(17_000) } })).status).toBe(431);
  });

  it('stops listening on close', async () => {
    const server = await startServer(app, [{ host: '127.0.0.1', port: 0 }]);
    const target = server.addresses[0] ?? { host: '', port: 0 };
    await server.close();
    await expect(sendTo(target, { path: '/' })).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('listens on all addresses or none, naming the one that failed', async () => {
    running = await startServer(app, [{ host: '127.0.0.1', port: 0 }]);
    const taken = running.addresses[0]?.port ?? 0;
    const attempt = startServer(app, [
      { host: '127.0.0.2', port: taken },
      { host: '127.0.0.1', port: taken },
    ]);
    await expect(attempt).rejects.toThrow(`cannot listen on 127.0.0.1:${taken}: listen EADDRINUSE`);
    // The address that did work was let go again.
    const again = await startServer(app, [{ host: '127.0.0.2', port: taken }]);
    await again.close();
  });
});
