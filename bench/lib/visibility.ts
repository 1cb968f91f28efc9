/**
 * A→B visibility (issue 15: a login on box A identifies the device on box B within a second, aim tens of ms):
 * box A is this process's PgSessions, logging in at a steady rate, each login on a preloaded key with a user
 * of its own; box B is bench/lib/visibility-box.ts in a process of its own, which notes when its copy first
 * answers each key with that user. Two latencies per login: from A's answer (the login API's 200) and from
 * A being asked, both to B's copy holding it.
 */
import { fork } from 'node:child_process';
import { join } from 'node:path';
import type { PostgresSettings } from '../../lib/store/postgres/connect.ts';
import type { SessionRepository } from '../../lib/store/store.ts';
import { spread, type Spread } from './figures.ts';
import { watchGc, type GcPauses } from './gc-pauses.ts';
import { epochNow, steadyLogins, type LoginRate } from './login-rate.ts';
import type { FromBox, ToBox } from './visibility-box.ts';

export interface Visibility {
  /** Box B's full load of the sessions (its Replica.start()), ms, and how many it loaded. */
  b_load_ms: number;
  b_sessions: number;
  /** A's logins (latency of each as A's caller saw it). */
  a_logins: LoginRate;
  /** From A's answer to B's copy holding the login, ms. */
  answered_to_b_ms: Spread;
  /** From A being asked to B's copy holding it, ms. */
  asked_to_b_ms: Spread;
  /** Logins B never saw within `settleMs` after the last, and those it had before it heard of them. */
  unseen: number;
  late: number;
  /** Garbage-collection pauses during the logins: box A's (this process), box B's. */
  a_gc: GcPauses;
  b_gc: GcPauses;
}

const BOX_B = join(import.meta.dirname, 'visibility-box.ts');

export async function measureVisibility(options: {
  sessions: Pick<SessionRepository, 'start'>;
  store: PostgresSettings;
  rate: number;
  durationMs: number;
  keys: number;
  /** After the last login, how long B is given (its replica polls every second anyway). */
  settleMs?: number;
}): Promise<Visibility> {
  const box = fork(
    BOX_B,
    [
      '--url',
      options.store.url,
      ...(options.store.passwordFile === null ? [] : ['--password-file', options.store.passwordFile]),
    ],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  const messages: FromBox[] = [];
  let wake = (): void => undefined;
  box.on('message', (m) => {
    messages.push(m as FromBox);
    wake();
  });
  const next = async <K extends string>(
    has: K,
    timeoutMs: number,
  ): Promise<Extract<FromBox, Record<K, unknown>>> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const failed = messages.find((m) => 'failed' in m);
      if (failed !== undefined && 'failed' in failed) throw new Error(`box B: ${failed.failed}`);
      const found = messages.find((m) => has in m);
      if (found !== undefined) return found as Extract<FromBox, Record<K, unknown>>;
      if (box.exitCode !== null) throw new Error(`box B exited with ${box.exitCode}`);
      if (Date.now() > deadline) throw new Error(`box B sent no ${has} in ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 100);
      });
    }
  };
  try {
    const ready = await next('ready', 120_000);
    const asked = new Map<number, number>();
    const answered = new Map<number, number>();
    const tell = (message: ToBox) => box.send(message);
    const gc = watchGc();
    const writer = steadyLogins(options.sessions, {
      rate: options.rate,
      keys: options.keys,
      username: (n) => `vis${n}`,
      onStart: (n, key, username) => {
        asked.set(n, epochNow());
        tell({ watch: [n, key, username] });
      },
      onAnswer: (n, _key, at) => answered.set(n, at),
    });
    await new Promise((resolve) => setTimeout(resolve, options.durationMs));
    const aLogins = await writer.stop();
    const aGc = gc.stop();
    await new Promise((resolve) => setTimeout(resolve, options.settleMs ?? 1500));
    tell({ stop: true });
    const { seen, unseen, gc: bGc } = await next('seen', 10_000);
    const fromAnswer: number[] = [];
    const fromAsk: number[] = [];
    for (const [n, at] of seen) {
      const a = answered.get(n);
      if (a !== undefined) fromAnswer.push(at - a);
      fromAsk.push(at - (asked.get(n) ?? at));
    }
    return {
      b_load_ms: ready.loadMs,
      b_sessions: ready.size,
      a_logins: aLogins,
      answered_to_b_ms: spread(fromAnswer),
      asked_to_b_ms: spread(fromAsk),
      unseen,
      late: seen.filter(([, , late]) => late).length,
      a_gc: aGc,
      b_gc: bGc,
    };
  } finally {
    if (box.exitCode === null && box.signalCode === null) {
      const exited = new Promise((resolve) => box.once('exit', resolve));
      const timer = setTimeout(() => box.kill('SIGKILL'), 5000);
      if (box.connected) box.disconnect();
      await exited;
      clearTimeout(timer);
    }
  }
}
