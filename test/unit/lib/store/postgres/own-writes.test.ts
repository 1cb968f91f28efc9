import { describe, expect, it } from 'vitest';
import { OwnWrites } from '../../../../../lib/store/postgres/own-writes.ts';
import { SessionTable } from '../../../../../lib/store/postgres/session-table.ts';
import { ip } from '../../../../support/session-keys.ts';
import { sessionRow } from '../../../../support/session-row.ts';

const row = sessionRow;

describe("OwnWrites (this process's session writes, applied again after a read that may lack them)", () => {
  it('a logout read before: the delta brings the row back, the logout is applied again on top', () => {
    const table = new SessionTable();
    const own = new OwnWrites();
    table.put(row({ change: 5 }));
    // Logged out at change 7 while read 3 (its snapshot at change 6: a "last seen" of the session) was under way.
    table.remove(1);
    own.record(7, 3, [], [1]);
    table.put(row({ change: 6, last_seen: 2000 }));
    own.replay(table, { seq: 3, last: 6 });
    expect(table.find(ip('10.0.0.5'), 0)).toBeUndefined();
    expect(own.size).toBe(1);
    // The next read has it: forgotten.
    own.replay(table, { seq: 4, last: 7 });
    expect(own.size).toBe(0);
  });

  it('a login made during a full load is applied to the table put in place; a newer row than it stands', () => {
    const loaded = new SessionTable();
    const own = new OwnWrites();
    own.record(9, 2, [row({ id: 4, key: '10.0.0.9', username: 'bob', change: 9 })], []);
    loaded.put(row({ id: 5, key: '10.0.0.5', change: 8 }));
    own.replay(loaded, { seq: 2, last: 8 });
    expect(loaded.find(ip('10.0.0.9'), 0)?.username).toBe('bob');
    expect(loaded.find(ip('10.0.0.5'), 0)?.id).toBe(5);
    // Applied twice (a later read still under way as it committed): the newer "last seen" stays.
    loaded.put(row({ id: 4, key: '10.0.0.9', username: 'bob', change: 10, last_seen: 3000 }));
    own.replay(loaded, { seq: 2, last: 8 });
    expect(loaded.find(ip('10.0.0.9'), 0)?.lastSeen).toBe(3000);
  });

  it('forgets a write once a read that began after it is applied, even one without it (a failover lost it)', () => {
    const table = new SessionTable();
    const own = new OwnWrites();
    own.record(9, 2, [row({ id: 4, change: 9 })], []);
    own.record(10, 3, [row({ id: 6, key: '10.0.0.6', change: 10 })], []);
    own.replay(table, { seq: 3, last: 5 });
    expect(own.size).toBe(1);
    expect(table.find(ip('10.0.0.5'), 0)).toBeUndefined();
    expect(table.find(ip('10.0.0.6'), 0)?.id).toBe(6);
    own.replay(table, { seq: 4, last: 5 });
    expect(own.size).toBe(0);
  });

  it('holds at most its limit of rows and ids: the oldest writes are let go first, the newest kept even alone', () => {
    const own = new OwnWrites(3);
    own.record(1, 1, [row({ id: 1 })], [7]);
    own.record(2, 1, [row({ id: 2, key: '10.0.0.2' })], []);
    expect([own.size, own.held]).toEqual([2, 3]);
    own.record(3, 1, [row({ id: 3, key: '10.0.0.3' })], []);
    expect([own.size, own.held]).toEqual([2, 2]);
    const table = new SessionTable();
    own.replay(table, { seq: 1, last: 0 });
    expect(table.list(0).map((s) => s.id)).toEqual([2, 3]);
    own.record(4, 1, [], [2, 3, 4, 5]);
    expect([own.size, own.held]).toEqual([1, 4]);
    own.replay(table, { seq: 2, last: 0 });
    expect([own.size, own.held]).toEqual([0, 0]);
  });

  it('keeps nothing for a write that changed no session', () => {
    const own = new OwnWrites();
    own.record(3, 1, [], []);
    expect(own.size).toBe(0);
  });
});
