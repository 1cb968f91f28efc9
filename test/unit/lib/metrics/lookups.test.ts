import { PassThrough } from 'node:stream';
import { Registry } from 'prom-client';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  bh,
  err,
  ok,
  type HelperReply,
  type HelperRequest,
} from '../../../../lib/helper-protocol/message.ts';
import { runHelper, type HelperHandlers } from '../../../../lib/helper-protocol/run.ts';
import { countedHandlers, lookupMetrics } from '../../../../lib/metrics/lookups.ts';
import { useMetricsRegistry } from '../../../../lib/metrics/registry.ts';
import { thrownOf } from '../../../support/thrown.ts';

let registry: Registry;
beforeEach(() => {
  registry = useMetricsRegistry(new Registry());
});

const request = (address: string): HelperRequest => ({ channel: '0', fields: [address] });
const sample = async (series: string) => {
  const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};
const count = (kind: string, answer: string) =>
  sample(`doorman_lookups_total{kind="${kind}",answer="${answer}"}`);

/** One batch as runHelper frames it: beforeBatch, the requests, afterBatch. */
function batch(h: HelperHandlers, addresses: string[]): Array<HelperReply | Promise<HelperReply>> {
  h.beforeBatch?.();
  const answers = addresses.map((a) => h.handle(request(a)));
  h.afterBatch?.();
  return answers;
}

describe('countedHandlers', () => {
  it('counts each synchronous answer under its kind and result at the end of its batch, each with the batch’s time', async () => {
    lookupMetrics();
    const seen: string[] = [];
    const h = countedHandlers('session', {
      beforeBatch: () => seen.push('before'),
      handle: (r) => (r.fields[0] === '10.0.0.1' ? ok() : err()),
      afterBatch: () => seen.push('after'),
    });
    expect(batch(h, ['10.0.0.1', '10.0.0.1', '10.0.0.2'])).toEqual([ok(), ok(), err()]);
    expect(seen).toEqual(['before', 'after']);
    expect(await count('session', 'OK')).toBe(2);
    expect(await count('session', 'ERR')).toBe(1);
    expect(await count('session', 'BH')).toBe(0);
    expect(await count('group', 'OK')).toBe(0);
    expect(await sample('doorman_lookup_duration_seconds_count{kind="session",answer="OK"}')).toBe(2);
    batch(h, ['10.0.0.1']);
    expect(await count('session', 'OK')).toBe(3);
  });

  it('counts an asynchronous answer when it settles, and a thrown or rejected one as BH', async () => {
    const h = countedHandlers('basic', {
      handle: (r) => {
        if (r.fields[0] === 'throw') throw new Error('ours');
        if (r.fields[0] === 'reject') return Promise.reject(new Error('ours'));
        return Promise.resolve(r.fields[0] === 'bh' ? bh('down') : ok());
      },
    });
    const [first, second] = batch(h, ['ok', 'bh']);
    h.beforeBatch?.();
    expect(thrownOf(Error, () => h.handle(request('throw'))).message).toBe('ours');
    const rejected = h.handle(request('reject'));
    h.afterBatch?.();
    expect(await count('basic', 'BH')).toBe(1);
    await Promise.all([first, second]);
    await expect(rejected).rejects.toThrow('ours');
    expect(await count('basic', 'OK')).toBe(1);
    expect(await count('basic', 'BH')).toBe(3);
  });

  it("answers but does not count what `uncounted` says is not Squid's (serve's probe)", async () => {
    const h = countedHandlers('session', { handle: () => err() }, (r) => r.fields[0] === '192.0.2.0');
    expect(batch(h, ['192.0.2.0', '10.0.0.3'])).toEqual([err(), err()]);
    expect(await count('session', 'ERR')).toBe(1);
  });

  it('counts every line runHelper answers, bad lines (BH of runHelper itself) not being lookups', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    output.resume();
    const h = countedHandlers('session', { handle: (r) => (r.fields[0] === '10.0.0.1' ? ok() : err()) });
    const done = runHelper({ input, output, channelIds: true, log: () => {}, ...h });
    input.write('0 10.0.0.1 -\n1 10.0.0.2 -\n');
    input.end('2 10.0.0.1 -\n');
    await done;
    expect(await count('session', 'OK')).toBe(2);
    expect(await count('session', 'ERR')).toBe(1);
  });
});
