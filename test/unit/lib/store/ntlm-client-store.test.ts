import { describe, expect, it } from 'vitest';
import { NTLM_CLIENTS_KEPT_MS, NtlmClientStore } from '../../../../lib/store/ntlm-client-store.ts';
import { useTempDb } from '../../../support/temp-db.ts';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.UTC(2026, 10, 23, 12, 30);

describe('NtlmClientStore', () => {
  const db = useTempDb('doorman-ntlm-clients-');

  it('adds counts per address and hour, and sums the hours since a time, most handshakes first', () => {
    const store = new NtlmClientStore(db.connect());
    store.add([{ address: '10.0.0.7', handshakes: 2, lastSeen: NOW - 2 * HOUR }], NOW);
    store.add(
      [
        { address: '10.0.0.7', handshakes: 3, lastSeen: NOW },
        { address: '10.0.0.9', handshakes: 4, lastSeen: NOW - 60_000 },
      ],
      NOW,
    );
    store.add([{ address: '10.0.0.7', handshakes: 1, lastSeen: NOW - 59_000 }], NOW);
    expect(store.seenSince(NOW - DAY, 10)).toEqual({
      addresses: 2,
      clients: [
        { address: '10.0.0.7', handshakes: 6, lastSeen: NOW },
        { address: '10.0.0.9', handshakes: 4, lastSeen: NOW - 60_000 },
      ],
    });
    // The limit cuts the list, not the count of addresses.
    expect(store.seenSince(NOW - DAY, 1)).toMatchObject({ addresses: 2, clients: [{ address: '10.0.0.7' }] });
    // Only the hours from `since` (rounded down to its hour) count; a tie goes by address.
    expect(store.seenSince(NOW - HOUR, 10).clients).toEqual([
      { address: '10.0.0.7', handshakes: 4, lastSeen: NOW },
      { address: '10.0.0.9', handshakes: 4, lastSeen: NOW - 60_000 },
    ]);
  });

  it('deletes hours older than it keeps at each add', () => {
    const handle = db.connect();
    const store = new NtlmClientStore(handle);
    store.add(
      [{ address: '10.0.0.1', handshakes: 1, lastSeen: NOW - NTLM_CLIENTS_KEPT_MS - HOUR }],
      NOW - DAY,
    );
    store.add([{ address: '10.0.0.2', handshakes: 1, lastSeen: NOW }], NOW);
    expect(handle.prepare('SELECT address FROM ntlm_clients').pluck().all()).toEqual(['10.0.0.2']);
  });

  it('refuses a row the table cannot hold (an empty address), writing nothing of that flush', () => {
    const handle = db.connect();
    const store = new NtlmClientStore(handle);
    expect(() =>
      store.add(
        [
          { address: '10.0.0.1', handshakes: 1, lastSeen: NOW },
          { address: '', handshakes: 1, lastSeen: NOW },
        ],
        NOW,
      ),
    ).toThrow(/CHECK constraint failed/);
    expect(store.seenSince(NOW - DAY, 10)).toEqual({ addresses: 0, clients: [] });
  });
});
