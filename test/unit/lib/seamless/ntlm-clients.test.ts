import { describe, expect, it } from 'vitest';
import { NtlmClientTally } from '../../../../lib/seamless/ntlm-clients.ts';

describe('NtlmClientTally', () => {
  it('counts per address, the latest time kept; take() empties it', () => {
    const tally = new NtlmClientTally(10);
    tally.add('10.0.0.7', 5);
    tally.add('10.0.0.7', 3);
    tally.add(undefined, 4);
    expect(tally.take()).toEqual([
      { address: '10.0.0.7', handshakes: 2, lastSeen: 5 },
      { address: '-', handshakes: 1, lastSeen: 4 },
    ]);
    expect(tally.size).toBe(0);
  });

  it("keeps at most maxAddresses addresses (and '-'): the rest count under '-'", () => {
    const tally = new NtlmClientTally(2);
    for (let i = 0; i < 1000; i++) tally.add(`10.0.${i >> 8}.${i & 255}`, i);
    expect(tally.size).toBe(3);
    expect(tally.take()).toEqual([
      { address: '10.0.0.0', handshakes: 1, lastSeen: 0 },
      { address: '10.0.0.1', handshakes: 1, lastSeen: 1 },
      { address: '-', handshakes: 998, lastSeen: 999 },
    ]);
  });

  it('restore() merges back what a failed write took, under the same cap', () => {
    const tally = new NtlmClientTally(2);
    tally.add('10.0.0.7', 1);
    const taken = tally.take();
    tally.add('10.0.0.8', 2);
    tally.add('10.0.0.9', 3);
    tally.restore(taken);
    expect(tally.take()).toEqual([
      { address: '10.0.0.8', handshakes: 1, lastSeen: 2 },
      { address: '10.0.0.9', handshakes: 1, lastSeen: 3 },
      { address: '-', handshakes: 1, lastSeen: 1 },
    ]);
  });
});
