/**
 * How long each validator of outside input takes on its worst case at the field's maximum length (the cases
 * of test/harness/worst-cases.ts, whose verdicts the unit test checks), and, for comparison, the bind-DN
 * pattern Doorman used before, on the same shape of input but far shorter, since each 4 more characters
 * doubled its time. Printed, never asserted. Run: `node bench/regex-worst-case.ts` (Node 24, from the repo).
 *
 *   ROUNDS=200   calls per case after one warm-up call (fewer for a case slower than 1 ms)
 */
import { performance } from 'node:perf_hooks';
import { WORST_CASES } from '../test/harness/worst-cases.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 200);

/** Median and worst time of `run(input)`, in milliseconds. */
function time(run: () => unknown): { median: number; max: number; calls: number } {
  const first = performance.now();
  run();
  const warmUp = performance.now() - first;
  const calls = warmUp > 1 ? Math.max(5, Math.min(ROUNDS, Math.floor(1000 / warmUp))) : ROUNDS;
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const start = performance.now();
    run();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(times.length / 2)] ?? 0, max: times.at(-1) ?? 0, calls };
}

const ms = (n: number) => n.toFixed(n < 1 ? 4 : 1).padStart(10);
const row = (name: string, length: number, verdict: string, t: ReturnType<typeof time>) =>
  console.log(`${ms(t.median)} ${ms(t.max)} ${String(length).padStart(7)}  ${verdict.padEnd(8)} ${name}`);

console.log(`node ${process.version}, ${ROUNDS} calls per case`);
console.log(`${'median ms'.padStart(10)} ${'max ms'.padStart(10)} ${'chars'.padStart(7)}  verdict  case`);
for (const worstCase of WORST_CASES) {
  const input = worstCase.input();
  const verdict = worstCase.run(input).accepted ? 'accepted' : 'rejected';
  row(
    worstCase.name,
    input.length,
    verdict,
    time(() => worstCase.run(input)),
  );
}

// The pattern the bind DN was checked with until issue 6; at 1,024 characters it would run for longer than
// the universe has existed. Kept here only to show what the linear check replaced.
const OLD_BIND_DN =
  // eslint-disable-next-line regexp/no-super-linear-backtracking, regexp/optimal-quantifier-concatenation -- the point
  /^[A-Za-z][A-Za-z0-9-]*=(?:[^,=\\]|\\.)+(?:\s*,\s*[A-Za-z][A-Za-z0-9-]*=(?:[^,=\\]|\\.)+)*$/;
console.log('\nfor comparison, the old bind-DN pattern on "cn=" + " ,x=y" repeated + ",":');
for (const units of [20, 22, 24, 26]) {
  const input = `cn=${' ,x=y'.repeat(units)},`;
  // One call each: the point is the doubling, not a precise figure.
  const start = performance.now();
  OLD_BIND_DN.test(input);
  const took = performance.now() - start;
  row('old bind-DN pattern', input.length, 'rejected', { median: took, max: took, calls: 1 });
}
