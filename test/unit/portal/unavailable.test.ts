import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/clock.ts';
import { startServer, type RunningServer } from '../../../portal/server.ts';
import { OpenOnDemand, unavailableApp } from '../../../portal/unavailable.ts';
import { sendTo } from './harness.ts';

describe('OpenOnDemand', () => {
  it('opens at once when it can', () => {
    const logs: string[] = [];
    const opener = new OpenOnDemand(() => 'db', { clock: new ManualClock(), log: (l) => logs.push(l) });
    expect(opener.get()).toEqual({ ok: true, value: 'db' });
    expect(logs).toEqual([]);
  });

  it('while it fails, tries again on demand at most once per retryMs, logs each reason once, then opens', () => {
    const clock = new ManualClock();
    const logs: string[] = [];
    let attempts = 0;
    let reason: string | undefined = 'stateDir: /x cannot be reached';
    const opener = new OpenOnDemand(
      () => {
        attempts++;
        if (reason !== undefined) throw new Error(reason);
        return 'db';
      },
      { clock, log: (l) => logs.push(l), retryMs: 1000 },
    );
    expect(opener.get()).toEqual({ ok: false, reason: 'stateDir: /x cannot be reached' });
    for (let i = 0; i < 5; i++) opener.get();
    expect(attempts).toBe(1);
    clock.advance(1000);
    opener.get();
    expect(attempts).toBe(2);
    expect(logs).toEqual([
      'session DB unavailable, answering 503 until it opens: stateDir: /x cannot be reached',
    ]);
    reason = 'cannot open session DB /x/doorman.db: disk I/O error';
    clock.advance(1000);
    expect(opener.get()).toMatchObject({ ok: false, reason });
    reason = undefined;
    expect(opener.get().ok).toBe(false);
    clock.advance(1000);
    expect(opener.get()).toEqual({ ok: true, value: 'db' });
    clock.advance(5000);
    expect(opener.get()).toEqual({ ok: true, value: 'db' });
    expect(attempts).toBe(4);
    expect(logs.slice(1)).toEqual([
      'session DB unavailable, answering 503 until it opens: cannot open session DB /x/doorman.db: disk I/O error',
      'session DB opened: serving again',
    ]);
  });
});

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
