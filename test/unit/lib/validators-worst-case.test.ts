import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import type { WorstCaseAnswer } from '../../harness/worst-case-worker.ts';
import { WORST_CASES } from '../../harness/worst-cases.ts';

/**
 * Every validator of outside input gives the right verdict on the input that is worst for a backtracking
 * pattern, at the field's maximum length. How long each takes is bench/regex-worst-case.ts's business, not
 * this test's: here a validator only has to answer at all. The cases run in a worker because a regex that
 * backtracks for hours cannot be interrupted in the test's own thread, where vitest's timeout would never
 * fire; the worker is stopped after STOP_AFTER_MS without an answer (a test timeout, generous enough for a
 * loaded machine: the linear validators answer in milliseconds) and that case fails.
 */
const STOP_AFTER_MS = 30_000;

let worker: Worker | undefined;
afterAll(async () => {
  await worker?.terminate();
});

/** The worker's answer for case `index`, or undefined when it had to be stopped. */
function ask(index: number): Promise<WorstCaseAnswer | undefined> {
  worker ??= new Worker(new URL('../../harness/worst-case-worker.ts', import.meta.url));
  const w = worker;
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      w.off('message', onMessage);
      w.off('error', onError);
    };
    const onMessage = (answer: WorstCaseAnswer) => {
      if (answer.index !== index) return;
      done();
      resolve(answer);
    };
    const onError = (error: Error) => {
      done();
      worker = undefined;
      reject(error);
    };
    const timer = setTimeout(() => {
      done();
      worker = undefined;
      void w.terminate();
      resolve(undefined);
    }, STOP_AFTER_MS);
    w.on('message', onMessage);
    w.on('error', onError);
    w.postMessage(index);
  });
}

describe("validators of outside input, on their worst case at the field's maximum length", () => {
  it.each(WORST_CASES.map((c, index) => [c.name, index] as const))(
    '%s',
    async (_name, index) => {
      const answer = await ask(index);
      expect(answer, `stopped after ${STOP_AFTER_MS / 1000} s without a verdict`).toBeDefined();
      const { expected } = WORST_CASES[index] ?? {};
      if (expected?.accepted === false) {
        expect(answer?.verdict.accepted).toBe(false);
        expect(answer?.verdict).toMatchObject({ problem: expect.stringContaining(expected.problem) });
      } else {
        expect(answer?.verdict).toEqual({ accepted: true });
      }
    },
    STOP_AFTER_MS + 10_000,
  );
});
