/**
 * Logins straight into a store: `callers` loops in this process, each calling sessions.start() and awaiting
 * it before the next, over the keys given in a fixed random order (each login replaces a live session). What
 * a login costs the store alone, without HTTP: the store's group commit puts the logins of one event-loop turn
 * in one transaction on both engines.
 */
import type { SessionRepository } from '../../lib/store/store.ts';
import { benchKey, benchUser, shuffledIndexes, spread, type Spread } from './figures.ts';

export interface LoginRateOptions {
  /** Concurrent callers (logins in flight at once). */
  callers: number;
  /** Keys benchKey(0..keys-1), all preloaded. */
  keys: number;
  warmupMs: number;
  durationMs: number;
  /** Where in the fixed order this run starts (runs after the first log in other keys first). */
  offset?: number;
  /** Called as the measured time starts (true) and ends (false): for CPU and GC readings of that time. */
  measuring?: (on: boolean) => void;
}

export interface LoginRate {
  logins: number;
  seconds: number;
  per_sec: number;
  /** Latency of one start(), ms. */
  lat_ms: Spread;
  errors: number;
  /** The first error's message, if any. */
  error: string | undefined;
}

export async function driveLogins(
  sessions: Pick<SessionRepository, 'start'>,
  options: LoginRateOptions,
): Promise<LoginRate> {
  const order = shuffledIndexes(options.keys, 7);
  const latencies: number[] = [];
  let next = options.offset ?? 0;
  let errors = 0;
  let error: string | undefined;
  let measuring = false;
  let stopping = false;
  const caller = async (): Promise<void> => {
    while (!stopping) {
      const i = order[next++ % options.keys] as number;
      const counts = measuring;
      const t0 = performance.now();
      try {
        await sessions.start({
          key: { kind: 'ip', value: benchKey(i) },
          username: benchUser(i),
          source: 'api',
        });
        if (counts && measuring) latencies.push(performance.now() - t0);
      } catch (e) {
        errors++;
        error ??= (e as Error).message;
      }
    }
  };
  const running = Array.from({ length: options.callers }, caller);
  await sleep(options.warmupMs);
  measuring = true;
  options.measuring?.(true);
  const t0 = performance.now();
  await sleep(options.durationMs);
  measuring = false;
  const seconds = (performance.now() - t0) / 1000;
  options.measuring?.(false);
  stopping = true;
  await Promise.all(running);
  return rateOf(latencies, seconds, errors, error);
}

/** The figures of logins answered in `seconds` with these latencies (ms). */
const rateOf = (
  latencies: number[],
  seconds: number,
  errors: number,
  error: string | undefined,
): LoginRate => ({
  logins: latencies.length,
  seconds: Math.round(seconds * 1000) / 1000,
  per_sec: Math.round(latencies.length / seconds),
  lat_ms: spread(latencies),
  errors,
  error,
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface SteadyLoginsOptions {
  /** Logins a second, spread evenly (issued every `tickMs`, late ticks catch up). */
  rate: number;
  /** Keys benchKey(0..keys-1), in a fixed random order of their own. */
  keys: number;
  tickMs?: number;
  /** The user of the nth login (default the key's user): a visibility probe gives each login its own. */
  username?: (n: number, index: number) => string;
  /** Called as a login is asked for, and as it is answered (epoch ms, sub-ms). */
  onStart?: (n: number, key: string, username: string) => void;
  onAnswer?: (n: number, key: string, at: number) => void;
}

export interface SteadyLogins {
  /** Stop asking; resolves once every login asked for is answered. */
  stop(): Promise<LoginRate>;
}

/** The time now as ms since the epoch with sub-ms precision, comparable between processes of one machine. */
export const epochNow = (): number => performance.timeOrigin + performance.now();

/** Logins at a steady rate, not waiting for answers (another box's users, or a visibility probe). */
export function steadyLogins(
  sessions: Pick<SessionRepository, 'start'>,
  options: SteadyLoginsOptions,
): SteadyLogins {
  const order = shuffledIndexes(options.keys, 11);
  const latencies: number[] = [];
  const inFlight = new Set<Promise<void>>();
  let asked = 0;
  let errors = 0;
  let error: string | undefined;
  const t0 = performance.now();
  const one = (): void => {
    const n = asked++;
    const index = order[n % options.keys] as number;
    const key = benchKey(index);
    const username = options.username?.(n, index) ?? benchUser(index);
    options.onStart?.(n, key, username);
    const started = performance.now();
    const login = sessions
      .start({ key: { kind: 'ip', value: key }, username, source: 'api' })
      .then(
        () => {
          latencies.push(performance.now() - started);
          options.onAnswer?.(n, key, epochNow());
        },
        (e: unknown) => {
          errors++;
          error ??= (e as Error).message;
        },
      )
      .finally(() => inFlight.delete(login));
    inFlight.add(login);
  };
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - t0) * options.rate) / 1000);
    while (asked < due) one();
  }, options.tickMs ?? 10);
  return {
    async stop() {
      clearInterval(timer);
      const seconds = (performance.now() - t0) / 1000;
      await Promise.all([...inFlight]);
      return rateOf(latencies, seconds, errors, error);
    },
  };
}
