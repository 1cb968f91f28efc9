import { describe, expect, it } from 'vitest';
import { SessionTable, type SessionRow } from '../../../../../lib/store/postgres/session-table.ts';

const row = (over: Partial<SessionRow> = {}): SessionRow => ({
  id: 1,
  key_kind: 'ip',
  key: '10.0.0.5',
  username: 'alice',
  source: 'api',
  created_at: 1000,
  last_seen: 1000,
  expires_at: null,
  idle_timeout: null,
  mac: null,
  change: 1,
  ...over,
});
const ip = (value: string) => ({ kind: 'ip' as const, value });

describe('SessionTable (a process copy of the sessions)', () => {
  it('finds by key as a Session, and not once its hard end has come', () => {
    const table = new SessionTable();
    table.put(row({ expires_at: 5000, mac: '02:00:00:00:00:01' }));
    expect(table.find(ip('10.0.0.5'), 4999)).toEqual({
      id: 1,
      key: ip('10.0.0.5'),
      username: 'alice',
      source: 'api',
      createdAt: 1000,
      lastSeen: 1000,
      expiresAt: 5000,
      idleTimeoutMs: undefined,
      mac: '02:00:00:00:00:01',
    });
    expect(table.find(ip('10.0.0.5'), 5000)).toBeUndefined();
    expect(table.find({ kind: 'mac', value: '10.0.0.5' }, 0)).toBeUndefined();
  });

  it('never replaces a row by an older version (a delta read before this process applied its own write)', () => {
    const table = new SessionTable();
    table.put(row({ id: 2, username: 'bob', change: 7 }));
    table.put(row({ id: 1, username: 'alice', change: 6 }));
    expect(table.find(ip('10.0.0.5'), 0)?.username).toBe('bob');
    table.put(row({ id: 3, username: 'carol', change: 8 }));
    expect(table.find(ip('10.0.0.5'), 0)?.username).toBe('carol');
    expect(table.size).toBe(1);
  });

  it('removes by id only the row that id names: a deletion of a replaced session leaves its successor', () => {
    const table = new SessionTable();
    table.put(row({ id: 1, change: 1 }));
    table.put(row({ id: 2, username: 'bob', change: 2 }));
    table.remove(1);
    expect(table.find(ip('10.0.0.5'), 0)?.username).toBe('bob');
    table.remove(2);
    expect(table.find(ip('10.0.0.5'), 0)).toBeUndefined();
    expect(table.size).toBe(0);
  });

  it('lists the live sessions by key kind, then key', () => {
    const table = new SessionTable();
    table.put(row({ id: 1, key: '10.0.0.9' }));
    table.put(row({ id: 2, key_kind: 'mac', key: '02:00:00:00:00:01' }));
    table.put(row({ id: 3, key: '10.0.0.10', expires_at: 10 }));
    table.put(row({ id: 4, key: '10.0.0.1' }));
    expect(table.list(100).map((s) => `${s.key.kind}:${s.key.value}`)).toEqual([
      'ip:10.0.0.1',
      'ip:10.0.0.9',
      'mac:02:00:00:00:00:01',
    ]);
  });
});
