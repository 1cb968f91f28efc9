import { parentPort } from 'node:worker_threads';
import { WORST_CASES, type Verdict } from './worst-cases.ts';

/**
 * Runs one worst case per message (its index in WORST_CASES) and answers with the verdict. In a worker so
 * that the test can stop a validator that never returns: synchronous code cannot be interrupted in-thread.
 */
export interface WorstCaseAnswer {
  index: number;
  length: number;
  verdict: Verdict;
}

parentPort?.on('message', (index: number) => {
  const worstCase = WORST_CASES[index];
  if (worstCase === undefined) throw new Error(`no worst case ${index}`);
  const input = worstCase.input();
  const answer: WorstCaseAnswer = { index, length: input.length, verdict: worstCase.run(input) };
  parentPort?.postMessage(answer);
});
