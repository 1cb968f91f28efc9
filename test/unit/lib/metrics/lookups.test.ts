import { Registry } from 'prom-client';
import { beforeEach, describe, expect, it } from 'vitest';
import { bh, err, ok, type HelperRequest } from '../../../../lib/helper-protocol/message.ts';
import { countedHandle, lookupMetrics } from '../../../../lib/metrics/lookups.ts';
import { useMetricsRegistry } from '../../../../lib/metrics/registry.ts';
import { thrownOf } from '../../../support/thrown.ts';

let registry: Registry;
beforeEach(() => {
  registry = useMetricsRegistry(new Registry());
});

const request = (address: string): HelperRequest => ({ channel: '0', fields: [address] });
const count = async (kind: string, answer: string) => {
  const text = await registry.metrics();
  const line = text
    .split('\n')
    .find((l) => l.startsWith(`doorman_lookups_total{kind="${kind}",answer="${answer}"} `));
  return Number(line?.split(' ')[1]);
};

describe('countedHandle', () => {
  it('counts each answer under its kind and result, synchronous ones staying synchronous', async () => {
    lookupMetrics();
    const handle = countedHandle('session', (r) => (r.fields[0] === '10.0.0.1' ? ok() : err()));
    expect(handle(request('10.0.0.1'))).toEqual(ok());
    handle(request('10.0.0.1'));
    handle(request('10.0.0.2'));
    expect(await count('session', 'OK')).toBe(2);
    expect(await count('session', 'ERR')).toBe(1);
    expect(await count('session', 'BH')).toBe(0);
    expect(await count('group', 'OK')).toBe(0);
    expect(await registry.metrics()).toContain(
      'doorman_lookup_duration_seconds_count{kind="session",answer="OK"} 2',
    );
  });

  it('counts an asynchronous answer when it settles, and a thrown or rejected one as BH', async () => {
    const handle = countedHandle('basic', (r) => {
      if (r.fields[0] === 'throw') throw new Error('ours');
      if (r.fields[0] === 'reject') return Promise.reject(new Error('ours'));
      return Promise.resolve(r.fields[0] === 'bh' ? bh('down') : ok());
    });
    await handle(request('ok'));
    await handle(request('bh'));
    expect(thrownOf(Error, () => handle(request('throw'))).message).toBe('ours');
    await expect(handle(request('reject'))).rejects.toThrow('ours');
    expect(await count('basic', 'OK')).toBe(1);
    expect(await count('basic', 'BH')).toBe(3);
  });

  it('answers but does not count what `uncounted` says is not Squid’s (serve’s probe)', async () => {
    const handle = countedHandle(
      'session',
      () => err(),
      (r) => r.fields[0] === '192.0.2.0',
    );
    expect(handle(request('192.0.2.0'))).toEqual(err());
    handle(request('10.0.0.3'));
    expect(await count('session', 'ERR')).toBe(1);
  });
});
