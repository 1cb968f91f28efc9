import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../lib/clock.ts';
import { helperSocket } from '../../../lib/seamless/paths.ts';
import { SessionStore } from '../../../lib/store/session-store.ts';
import { AuthdProcess, authdConfig } from '../../harness/authd-process.ts';
import { buildShim, Shim, SHIM_LATE, type ShimBounds } from '../../harness/shim.ts';
import { useTempDb } from '../../support/temp-db.ts';

beforeAll(buildShim);

/** The shim against the real authd (dist/, as serve starts it): the end of input, a restart, a stop. */
describe('doorman-shim with doorman-authd', () => {
  const db = useTempDb('doorman-shim-authd-');
  const started: Array<AuthdProcess | Shim> = [];
  afterEach(() => {
    for (const p of started.splice(0)) p.kill();
  });
  const authd = async () => {
    const a = new AuthdProcess(authdConfig(db.dir));
    started.push(a);
    await a.listening;
    return a;
  };
  const shim = (bounds?: ShimBounds) => {
    const s = new Shim(helperSocket(db.dir, 'session'), true, bounds);
    started.push(s);
    return s;
  };
  const aliceAt = (ip: string) =>
    new SessionStore(db.connect(), systemClock).start({
      key: { kind: 'ip', value: ip },
      username: 'alice',
      source: 'api',
    });

  it('answers every line piped to it and closed at once (printf ... | doorman-shim --concurrent)', async () => {
    aliceAt('10.0.0.5');
    await authd();
    const s = shim();
    s.send('0 10.0.0.5 -\n1 10.0.0.6 -\n');
    expect(await s.end()).toBe(0);
    expect(s.lines).toEqual(['0 OK user=alice', '1 ERR']);
  });

  it('holds a request while authd restarts, and the next authd answers it', async () => {
    aliceAt('10.0.0.5');
    const first = await authd();
    const s = shim();
    expect(await s.ask('1 10.0.0.5 -')).toBe('1 OK user=alice');
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    s.send('2 10.0.0.5 -\n');
    await authd();
    expect(await s.until(2)).toEqual(['1 OK user=alice', '2 OK user=alice']);
  });

  it('answers BH at the deadline while authd is stopped (SIGSTOP), and is served again once it runs', async () => {
    aliceAt('10.0.0.5');
    const a = await authd();
    const s = shim({ deadlineMs: 500 });
    expect(await s.ask('1 10.0.0.5 -')).toBe('1 OK user=alice');
    a.child.kill('SIGSTOP');
    expect(await s.ask('2 10.0.0.5 -')).toBe(`2 ${SHIM_LATE}`);
    a.child.kill('SIGCONT');
    expect(await s.ask('3 10.0.0.5 -')).toBe('3 OK user=alice');
    expect(s.lines).toEqual(['1 OK user=alice', `2 ${SHIM_LATE}`, '3 OK user=alice']);
  });
});
