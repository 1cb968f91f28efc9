/**
 * What counting costs a session lookup, in one process and one run, so that other load on the machine falls on
 * both sides alike: authd's session handler (createSessionService over a preloaded DB, answers cached as in
 * authd) called directly and through countedHandlers (lib/metrics/lookups.ts), as runHelper calls them (batches
 * of 100), in alternating rounds of --lookups calls each over the anchors' keys in a fixed random order. Prints one JSON line: the median
 * ns/lookup of each and the difference.
 *
 *   node bench/lib/lookup-count-cost.ts --config FILE [--lookups 1000000] [--rounds 7] [--sessions 10000]
 */
import { parseArgs } from 'node:util';
import { createSessionService } from '../../helpers/authd/session-service.ts';
import { dbPath, loadConfig } from '../../lib/config/load.ts';
import type { HelperRequest } from '../../lib/helper-protocol/message.ts';
import { countedHandlers, lookupMetrics } from '../../lib/metrics/lookups.ts';
import type { HelperHandlers } from '../../lib/helper-protocol/run.ts';
import { processRegistry } from '../../lib/metrics/registry.ts';
import { benchKey, seededRandom } from './figures.ts';

const { values } = parseArgs({
  options: {
    config: { type: 'string' },
    lookups: { type: 'string', default: '1000000' },
    rounds: { type: 'string', default: '7' },
    sessions: { type: 'string', default: '10000' },
  },
});
const { config } = loadConfig(values.config);
const lookups = Number(values.lookups);
const sessions = Number(values.sessions);
processRegistry('authd', { defaults: true });
lookupMetrics();
const service = createSessionService({
  settings: () => ({ path: dbPath(config), flushEveryMs: 30_000 }),
  log: (line) => process.stderr.write(`${line}\n`),
});
const plainHandlers = service.handlers;
const countedOnes = countedHandlers('session', plainHandlers, (r) => r.fields[0] === '192.0.2.0');
const rand = seededRandom(42);
const requests: HelperRequest[] = Array.from({ length: 65_536 }, (_, i) => ({
  channel: String(i % 100),
  fields: [benchKey(Math.floor(rand() * sessions)), '-'],
}));

/** As runHelper drives them: batches of BATCH lookups (what one read from a busy shim holds), each framed. */
const BATCH = 100;
function round(h: HelperHandlers): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < lookups; i += BATCH) {
    h.beforeBatch?.();
    for (let j = i; j < i + BATCH; j++) h.handle(requests[j & 65_535] as HelperRequest);
    h.afterBatch?.();
  }
  return Number(process.hrtime.bigint() - started) / lookups;
}
// Warm both (the cache filled, the code optimised), then alternate.
const handle = plainHandlers;
const counted = countedOnes;
round(handle);
round(counted);
const plain: number[] = [];
const withCount: number[] = [];
for (let r = 0; r < Number(values.rounds); r++) {
  plain.push(round(handle));
  withCount.push(round(counted));
}
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)] ?? NaN;
const a = median(plain);
const b = median(withCount);
console.log(
  JSON.stringify({
    label: 'session lookup in-process, plain vs counted',
    plain_ns: Math.round(a * 10) / 10,
    counted_ns: Math.round(b * 10) / 10,
    cost_ns: Math.round((b - a) * 10) / 10,
    cost_pct: Math.round(((b - a) / a) * 1000) / 10,
  }),
);
await service.close();
