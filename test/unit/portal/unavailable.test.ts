import { afterEach, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../../portal/server.ts';
import { unavailableApp } from '../../../portal/unavailable.ts';
import { sendTo } from './harness.ts';

describe('unavailableApp', () => {
  let running: RunningServer | undefined;
  afterEach(async () => {
    await running?.close();
    running = undefined;
  });

  it('answers every request with a JSON 503 that says why, and logs it as one line', async () => {
    const logs: string[] = [];
    running = await startServer(
      unavailableApp(
        () => 'stateDir: /x cannot be reached',
        (l) => logs.push(l),
      ),
      [{ host: '127.0.0.1', port: 0 }],
    );
    const reply = await sendTo(running.addresses[0] ?? { host: '', port: 0 }, {
      method: 'POST',
      path: '/api/login/',
    });
    expect(reply.status).toBe(503);
    expect(reply.headers['retry-after']).toBe('1');
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.json).toEqual({
      ok: false,
      error: 'service_unavailable',
      message: 'the session DB cannot be opened: stateDir: /x cannot be reached',
    });
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatch(/^portal: POST "\/api\/login\/" 503 ip=127\.0\.0\.1 \d+ms$/);
  });
});
