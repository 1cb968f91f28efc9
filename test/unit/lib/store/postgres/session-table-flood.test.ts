import { describe, expect, it } from 'vitest';
import { SessionTable } from '../../../../../lib/store/postgres/session-table.ts';
import { hashBytes } from '../../../../../lib/store/postgres/slot-index.ts';

/**
 * An outsider picks its IPv6 addresses (any of 2^64 in its /64) and has Doorman's source: if the key index
 * hashed every process the same way, it could choose, offline, addresses that all land on one cell, and each
 * login or lookup on them would walk all the others (linear time on outside input, in the process that
 * answers Squid for everyone). Here: 1,000 addresses sharing the low 12 bits of the hash under a key the
 * outsider knows (1, 0: with no secret, an IP key's hash was FNV-1a from 1), found by trying addresses in turn.
 */
function collidingAddresses(count: number, k0: number, k1: number): string[] {
  const found: string[] = [];
  const bytes = Buffer.alloc(64);
  for (let n = 0; found.length < count; n++) {
    const address = `2001:db8:0:1:${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}::1`;
    const length = bytes.write(address, 0, 'latin1');
    if ((hashBytes(bytes, length, k0, k1) & 4095) === 0) found.push(address);
  }
  return found;
}

describe('SessionTable against keys chosen to collide', () => {
  it('keeps lookups short when an outsider picks addresses that collide under a hash it can compute', () => {
    const addresses = collidingAddresses(1000, 1, 0);
    const table = new SessionTable();
    addresses.forEach((key, i) =>
      table.put({
        id: i + 1,
        key_kind: 'ip',
        key,
        username: 'mallory',
        source: 'portal',
        created_at: 0,
        last_seen: 0,
        expires_at: null,
        idle_timeout: null,
        mac: null,
        change: i + 1,
      }),
    );
    expect(table.size).toBe(1000);
    // 1,000 keys in 2,048 cells: a longest run of 12 (37 at worst over 300 keys) where a known key gave 1,000
    expect(table.stats().longestKeyProbe).toBeLessThan(64);
    for (const key of addresses) expect(table.find({ kind: 'ip', value: key }, 0)?.username).toBe('mallory');
  });
});
