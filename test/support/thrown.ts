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
