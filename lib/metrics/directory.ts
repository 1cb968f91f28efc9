import { Counter, Histogram } from 'prom-client';
import { secondsSince, SLOW_BUCKETS } from './buckets.ts';
import { family } from './registry.ts';

/**
 * The directory (LDAP or AD), from whichever process asks it (authd for Basic and groups, serve for the
 * splash page and the admin's test): binds checking a user's password, and searches (groups, users).
 * outcome: ok, refused (a wrong password or an account that may not sign in: the user's doing), error (the
 * directory unreachable, timed out or failing: ours).
 */
export const DIRECTORY_OPERATIONS = ['bind', 'search'] as const;
export type DirectoryOperation = (typeof DIRECTORY_OPERATIONS)[number];
export const DIRECTORY_OUTCOMES = ['ok', 'refused', 'error'] as const;
export type DirectoryOutcome = (typeof DIRECTORY_OUTCOMES)[number];

const directory = family((registry) => {
  const total = new Counter({
    name: 'doorman_directory_operations_total',
    help: "Directory operations by operation (bind: a user's password checked; search) and outcome (ok, refused, error).",
    labelNames: ['operation', 'outcome'],
    registers: [registry],
  });
  const seconds = new Histogram({
    name: 'doorman_directory_duration_seconds',
    help: 'Time a directory operation took, connecting included, by operation.',
    labelNames: ['operation'],
    buckets: [...SLOW_BUCKETS],
    registers: [registry],
  });
  for (const operation of DIRECTORY_OPERATIONS) {
    seconds.zero({ operation });
    for (const outcome of DIRECTORY_OUTCOMES) total.inc({ operation, outcome }, 0);
  }
  return { total, seconds };
});

export function countDirectory(
  operation: DirectoryOperation,
  outcome: DirectoryOutcome,
  seconds: number,
): void {
  const m = directory();
  m.total.inc({ operation, outcome });
  m.seconds.observe({ operation }, seconds);
}

export function directoryMetrics(): void {
  directory();
}

/** `run` timed and counted: its outcome from what it returned (`outcomeOf`), error when it threw. */
export async function timedDirectory<T>(
  operation: DirectoryOperation,
  run: () => Promise<T>,
  outcomeOf: (value: T) => DirectoryOutcome = () => 'ok',
): Promise<T> {
  const started = performance.now();
  try {
    const value = await run();
    countDirectory(operation, outcomeOf(value), secondsSince(started));
    return value;
  } catch (error) {
    countDirectory(operation, 'error', secondsSince(started));
    throw error;
  }
}
