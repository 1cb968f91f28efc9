import { existsSync, lstatSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../../../lib/clock.ts';
import { helperSocket, runDir } from '../../../../lib/seamless/paths.ts';
import { SessionStore } from '../../../../lib/store/session-store.ts';
import { AuthdProcess, authdConfig } from '../../../harness/authd-process.ts';
import { buildShim, Shim, SHIM_DOWN, type ShimBounds } from '../../../harness/shim.ts';
import { useTempDb } from '../../../support/temp-db.ts';

beforeAll(buildShim);

const NOT_ENABLED = 'BH message=seamless%20authentication%20is%20not%20enabled';

describe('doorman-authd', () => {
  const db = useTempDb('doorman-authd-');
  const started: Array<AuthdProcess | Shim> = [];
  const authd = async (extra: readonly string[] = []) => {
    const a = new AuthdProcess(authdConfig(db.dir), extra);
    started.push(a);
    await a.listening;
    return a;
  };
  const shim = (kind: 'session' | 'basic' | 'group' | 'negotiate' | 'ntlm', bounds?: ShimBounds) => {
    const s = new Shim(helperSocket(db.dir, kind), kind !== 'negotiate' && kind !== 'ntlm', bounds);
    started.push(s);
    return s;
  };
  afterEach(() => {
    for (const p of started.splice(0)) p.kill();
  });

  it('answers session lookups from every shim in one process, on sockets only its user and group reach', async () => {
    new SessionStore(db.connect(), systemClock).start({
      key: { kind: 'ip', value: '10.0.0.5' },
      username: 'alice',
      source: 'api',
    });
    await authd();
    expect(statSync(runDir(db.dir)).mode & 0o777).toBe(0o750);
    for (const kind of ['session', 'basic', 'group', 'negotiate', 'ntlm'] as const) {
      expect(statSync(helperSocket(db.dir, kind)).mode & 0o777, kind).toBe(0o660);
    }
    const [one, two] = [shim('session'), shim('session')];
    expect(await one.ask('1 10.0.0.5 -')).toBe('1 OK user=alice');
    expect(await two.ask('7 10.0.0.6 -')).toBe('7 ERR');
    expect(await two.ask('8 10.0.0.5 -')).toBe('8 OK user=alice');
    // runHelper's own checks hold through the shim: a line without a channel-ID is BH, and the child goes on.
    expect(await one.ask('no-channel')).toMatch(/^BH message=request%20has%20no%20channel-ID/);
    expect(await one.ask('2 10.0.0.5 -')).toBe('2 OK user=alice');
    // doorman explain's question on the same socket: no seamless handshake seen from the address yet.
    expect(await two.ask('9 seamless-last 10.0.0.5')).toBe('9 ERR message=none');
    expect(await one.end()).toBe(0);
  });

  it('answers Basic and group checks BH while no directory is applied', async () => {
    db.connect();
    await authd();
    expect(await shim('basic').ask('1 alice secret')).toBe(
      '1 BH message=no%20directory%20applied%3A%20doorman%20directory%20set',
    );
    expect(await shim('group').ask('4 alice Staff')).toBe(
      '4 BH message=no%20directory%20applied%3A%20doorman%20directory%20set',
    );
  });

  it('answers Negotiate and NTLM requests BH while seamless authentication is not enabled', async () => {
    db.connect();
    await authd();
    const negotiate = shim('negotiate');
    expect(await negotiate.ask('YR YIIBhgYGKwYBBQUCoIIBejCCAXag')).toBe(NOT_ENABLED);
    expect(await shim('ntlm').ask('YR TlRMTVNTUAABAAAAB4IIogAAAAAAAAAAAAAAAAAAAAAKAGFKAAAADw==')).toBe(
      NOT_ENABLED,
    );
    expect(negotiate.alive).toBe(true);
  });

  it('on SIGHUP hands its sockets to a successor that answers the same shims, losing no request; then exits 0', async () => {
    new SessionStore(db.connect(), systemClock).start({
      key: { kind: 'ip', value: '10.0.0.5' },
      username: 'alice',
      source: 'api',
    });
    const first = await authd();
    const shims = [shim('session'), shim('session')];
    const answers: string[] = [];
    // Steady lookups from both shims across the restart: every one answered OK (the shims hold, never BH).
    let asking = true;
    const load = shims.map(async (s, n) => {
      for (let id = n * 100_000; asking; id++) answers.push(await s.ask(`${id} 10.0.0.5 -`));
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    first.child.kill('SIGHUP');
    expect(await first.exited).toBe(0);
    const successor = Number(/handed over to pid (\d+): stopping/.exec(first.stderr)?.[1]);
    try {
      expect(readFileSync(join(runDir(db.dir), 'authd.pid'), 'latin1')).toBe(`${successor}\n`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      asking = false;
      await Promise.all(load);
      expect(answers.length).toBeGreaterThan(10);
      expect(answers.filter((a) => !/^\d+ OK user=alice$/.test(a))).toEqual([]);
      for (const kind of ['session', 'basic', 'group', 'negotiate', 'ntlm'] as const) {
        expect(lstatSync(helperSocket(db.dir, kind)).isSocket(), kind).toBe(true);
      }
    } finally {
      process.kill(successor, 'SIGKILL');
    }
  });

  it('stops on SIGTERM with exit 0; the shims answer BH past their hold, and are served again by the next authd', async () => {
    new SessionStore(db.connect(), systemClock).start({
      key: { kind: 'ip', value: '10.0.0.5' },
      username: 'alice',
      source: 'api',
    });
    const first = await authd();
    const s = shim('session', { holdMs: 300 });
    expect(await s.ask('1 10.0.0.5 -')).toBe('1 OK user=alice');
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.stderr).toMatch(/SIGTERM: stopping \(1 connections\)/);
    expect(existsSync(helperSocket(db.dir, 'session'))).toBe(false);
    expect(await s.ask('2 10.0.0.5 -')).toBe(`2 ${SHIM_DOWN}`);
    // One killed outright leaves its socket files: the next one replaces them.
    const second = await authd();
    second.child.kill('SIGKILL');
    await second.exited;
    expect(existsSync(helperSocket(db.dir, 'session'))).toBe(true);
    await authd();
    for (let id = 3; ; id++) {
      const line = await s.ask(`${id} 10.0.0.5 -`);
      if (line === `${id} OK user=alice`) break;
      expect(line).toBe(`${id} ${SHIM_DOWN}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(s.alive).toBe(true);
  });
});
