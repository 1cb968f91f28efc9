import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../lib/clock.ts';
import { OpenOnDemand } from '../../../lib/open-on-demand.ts';

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

describe('OpenOnDemand with an opening that takes time (a PostgreSQL store connects and loads)', () => {
  it('answers "being opened" meanwhile, starts no second attempt, and is open once it has settled', async () => {
    let attempts = 0;
    let finish: (value: string) => void = () => undefined;
    const opener = new OpenOnDemand(
      () => {
        attempts++;
        return new Promise<string>((resolve) => (finish = resolve));
      },
      { clock: new ManualClock(), log: () => undefined, retryMs: 0 },
    );
    expect(opener.get()).toEqual({ ok: false, reason: 'it is being opened' });
    expect(opener.get().ok).toBe(false);
    const settled = opener.settled();
    expect(attempts).toBe(1);
    finish('store');
    await settled;
    expect(opener.get()).toEqual({ ok: true, value: 'store' });
  });

  it('a rejected opening is a reason like a thrown one, and is tried again after retryMs', async () => {
    const logs: string[] = [];
    const clock = new ManualClock();
    let fail = true;
    const opener = new OpenOnDemand(
      () => (fail ? Promise.reject(new Error('PostgreSQL unreachable')) : Promise.resolve('store')),
      { clock, log: (l) => logs.push(l), retryMs: 1000 },
    );
    await opener.settled();
    expect(opener.get()).toEqual({ ok: false, reason: 'PostgreSQL unreachable' });
    fail = false;
    await opener.settled();
    expect(opener.get().ok).toBe(true);
    expect(logs).toEqual([
      'session DB unavailable, answering 503 until it opens: PostgreSQL unreachable',
      'session DB opened: serving again',
    ]);
  });
});
