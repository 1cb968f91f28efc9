import { DoormanError } from '../../lib/errors.ts';

/** What `promise` rejects with; undefined if it resolves. Never rejects itself, so it can be awaited later. */
export function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  );
}

/** The DoormanError `fn` throws; fails the test if it throws something else or nothing. */
export function thrown(fn: () => unknown): DoormanError {
  try {
    fn();
  } catch (error) {
    if (error instanceof DoormanError) return error;
    throw new Error(`expected a DoormanError, got ${String(error)}`, { cause: error });
  }
  throw new Error('expected a DoormanError, nothing was thrown');
}

/** The error of class `type` that `fn` throws; fails the test if it throws something else or nothing. */
export function thrownOf<E extends Error>(type: abstract new (...args: never[]) => E, fn: () => unknown): E {
  try {
    fn();
  } catch (error) {
    if (error instanceof type) return error;
    throw new Error(`expected a ${type.name}, got ${String(error)}`, { cause: error });
  }
  throw new Error(`expected a ${type.name}, nothing was thrown`);
}
