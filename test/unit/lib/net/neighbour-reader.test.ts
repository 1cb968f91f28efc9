import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import type { IpResult } from '../../../../lib/net/ip-runner.ts';
import { NeighbourReader, readProcArp } from '../../../../lib/net/neighbour-reader.ts';
import { ARP_TABLE, NEIGH_ALL } from './neighbour-fixtures.ts';

/** An `ip` whose answers the test releases, counting its runs. */
function heldIp(answer: IpResult) {
  const calls: string[] = [];
  const pending: Array<() => void> = [];
  const run = (args: readonly string[]) => {
    calls.push(args.join(' '));
    return new Promise<IpResult>((resolve) => pending.push(() => resolve(answer)));
  };
  return { run, calls, release: () => pending.splice(0).forEach((go) => go()) };
}

describe('NeighbourReader', () => {
  it('shares one IPv6 reading among the lookups in flight and reuses it for ttlMs for the addresses it has', async () => {
    const clock = new ManualClock();
    const ip = heldIp({ code: 0, stdout: NEIGH_ALL, stderr: '' });
    const reader = new NeighbourReader({ clock, run: ip.run, ttlMs: 1000 });
    const burst = Array.from({ length: 50 }, (_, i) => reader.listing(`fd57::${i + 1}`));
    ip.release();
    const listings = await Promise.all(burst);
    expect(new Set(listings).size).toBe(1);
    expect(listings[0]).toMatchObject({ ok: true });
    expect(ip.calls).toEqual(['-json -6 neigh show']);
    clock.advance(999);
    await reader.listing('fd57::2');
    expect(ip.calls).toHaveLength(1);
    // One it has no device MAC for: perhaps a device that has just appeared; read again.
    const miss = reader.listing('fd57::99');
    ip.release();
    await miss;
    expect(ip.calls).toHaveLength(2);
    clock.advance(1000);
    const later = reader.listing('fd57::2');
    ip.release();
    await later;
    expect(ip.calls).toHaveLength(3);
  });

  it('reads IPv4 from /proc/net/arp, once per ttlMs, with no process', async () => {
    const clock = new ManualClock();
    let reads = 0;
    const ip = heldIp({ code: 0, stdout: '[]', stderr: '' });
    const reader = new NeighbourReader({
      clock,
      run: ip.run,
      readArp: () => (reads++, Promise.resolve(ARP_TABLE)),
    });
    const listings = await Promise.all(
      ['10.250.7.2', '10.250.7.3', '10.0.0.1'].map((a) => reader.listing(a)),
    );
    expect(listings[0]).toMatchObject({ ok: true, entries: [{ ip: '10.250.7.2' }, {}, {}, {}] });
    expect(reads).toBe(1);
    await reader.listing('10.250.7.2');
    expect(reads).toBe(1);
    expect(ip.calls).toEqual([]);
  });

  it('does not reuse a failed reading: the next lookup reads again', async () => {
    const clock = new ManualClock();
    let reads = 0;
    const reader = new NeighbourReader({
      clock,
      run: () => Promise.reject(new Error('unused')),
      readArp: () => (reads++, Promise.reject(new Error('EACCES'))),
    });
    expect(await reader.listing('10.0.0.1')).toEqual({ ok: false, reason: 'EACCES' });
    expect(await reader.listing('10.0.0.1')).toEqual({ ok: false, reason: 'EACCES' });
    expect(reads).toBe(2);
  });
});

describe('readProcArp', () => {
  it('reads at most maxBytes + 1 bytes, so that a longer file is refused by the parser, not cut unseen', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'doorman-arp-'));
    try {
      const file = join(dir, 'arp');
      writeFileSync(file, ARP_TABLE);
      expect(await readProcArp(1 << 20, file)).toBe(ARP_TABLE);
      expect(await readProcArp(10, file)).toBe(ARP_TABLE.slice(0, 11));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads the real /proc/net/arp', async () => {
    expect(await readProcArp(1 << 20)).toMatch(/^IP address {7}HW type/);
  });
});
