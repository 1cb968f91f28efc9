import { describe, expect, it } from 'vitest';
import { SessionTable, type SessionRow } from '../../../../../lib/store/postgres/session-table.ts';
import { ip } from '../../../../support/session-keys.ts';
import { sessionRow } from '../../../../support/session-row.ts';

const row = sessionRow;

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

describe('SessionTable, held compactly (slots, an arena, two indexes)', () => {
  it('moves a key between rows: an id seen on another key leaves its old one, unless that one is newer', () => {
    const table = new SessionTable();
    table.put(row({ id: 1, key: '10.0.0.1', change: 1 }));
    table.put(row({ id: 1, key: '10.0.0.2', change: 2 }));
    expect(table.find(ip('10.0.0.1'), 0)).toBeUndefined();
    expect(table.find(ip('10.0.0.2'), 0)?.id).toBe(1);
    expect(table.size).toBe(1);
    // an older version of the same id on its former key changes nothing
    table.put(row({ id: 1, key: '10.0.0.1', change: 1 }));
    expect(table.find(ip('10.0.0.1'), 0)).toBeUndefined();
    table.remove(1);
    expect(table.size).toBe(0);
    expect(table.list(0)).toEqual([]);
  });

  it('takes an equal change number (a row read again), and a new id on a key drops the old id', () => {
    const table = new SessionTable();
    table.put(row({ id: 1, last_seen: 1000, change: 3 }));
    table.put(row({ id: 1, last_seen: 2000, change: 3 }));
    expect(table.find(ip('10.0.0.5'), 0)?.lastSeen).toBe(2000);
    table.put(row({ id: 2, change: 4 }));
    table.remove(1); // the replaced id: nothing of it is held any more
    expect(table.find(ip('10.0.0.5'), 0)?.id).toBe(2);
    table.remove(99);
    expect(table.size).toBe(1);
  });

  it('keeps the same key under both kinds apart, and ids past 2^32', () => {
    const table = new SessionTable();
    table.put(row({ id: 2 ** 40, key_kind: 'mac', key: 'k', username: 'on-mac' }));
    table.put(row({ id: 2 ** 40 + 1, key: 'k', username: 'on-ip' }));
    expect(table.find({ kind: 'mac', value: 'k' }, 0)).toMatchObject({ id: 2 ** 40, username: 'on-mac' });
    expect(table.find(ip('k'), 0)).toMatchObject({ id: 2 ** 40 + 1, username: 'on-ip' });
    table.remove(2 ** 40);
    expect(table.find({ kind: 'mac', value: 'k' }, 0)).toBeUndefined();
    expect(table.find(ip('k'), 0)?.username).toBe('on-ip');
  });

  it('holds users and keys of every length, ASCII or not, in the slot or the arena, and changes between them', () => {
    const table = new SessionTable();
    const units = ['a', 'é', '€', '😀'];
    const users: string[] = [];
    for (let length = 1; length <= 1024; length += length < 40 ? 1 : 37) {
      for (const unit of units) users.push(Array.from({ length }, (_, i) => (i % 2 ? 'x' : unit)).join(''));
    }
    const keys = users.map((_, i) => `${'k'.repeat(i % 64)}${i}`.slice(-64));
    users.forEach((username, i) =>
      table.put(row({ id: i + 1, key: keys[i] as string, username, change: 1 })),
    );
    users.forEach((username, i) => expect(table.find(ip(keys[i] as string), 0)?.username).toBe(username));
    // every user moves to another's (short to long, long to short), then back
    for (const shift of [1, users.length - 1]) {
      users.forEach((_, i) => {
        const username = users[(i + shift) % users.length] as string;
        table.put(row({ id: i + 1, key: keys[i] as string, username, change: 1 + shift }));
      });
      users.forEach((_, i) =>
        expect(table.find(ip(keys[i] as string), 0)?.username).toBe(users[(i + shift) % users.length]),
      );
    }
    expect(table.size).toBe(users.length);
  });

  it('adds, changes and drops a MAC', () => {
    const table = new SessionTable();
    table.put(row({ id: 1, mac: '02:00:00:00:00:01', change: 1 }));
    expect(table.find(ip('10.0.0.5'), 0)?.mac).toBe('02:00:00:00:00:01');
    table.put(row({ id: 1, mac: '02:00:00:00:00:02', change: 2 }));
    expect(table.find(ip('10.0.0.5'), 0)?.mac).toBe('02:00:00:00:00:02');
    table.put(row({ id: 1, mac: null, change: 3 }));
    expect(table.find(ip('10.0.0.5'), 0)).not.toHaveProperty('mac');
  });

  it('holds a MAC that outgrows the scratch bytes (the buffer it is encoded into is the one stored)', () => {
    // Only 17 characters reach it from PostgreSQL (schema.ts); the table itself sets no bound.
    const table = new SessionTable();
    const mac = 'aa:'.repeat(40) + 'aa';
    table.put(row({ id: 1, mac, change: 1 }));
    expect(table.find(ip('10.0.0.5'), 0)?.mac).toBe(mac);
  });

  it('grows past its first page and index, reuses freed slots, and compacts its strings under churn', () => {
    const table = new SessionTable();
    const n = 150_000;
    const key = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    // users longer than fit beside the key in a slot: they live in the arena
    const user = (i: number, round: number) => `someone-with-a-long-name-${i}-${round}`;
    const rows = (round: number) =>
      Array.from({ length: n }, (_, i) =>
        row({ id: round * n + i + 1, key: key(i), username: user(i, round), change: round + 1 }),
      );
    for (const r of rows(0)) table.put(r);
    expect(table.size).toBe(n);
    // every other session ends; new ones on other keys take the freed slots
    for (let i = 0; i < n; i += 2) table.remove(i + 1);
    for (let i = 0; i < n; i += 2)
      table.put(row({ id: 10 * n + i, key: `mac-${i}`, key_kind: 'mac', username: user(i, 9), change: 2 }));
    expect(table.size).toBe(n);
    expect(table.stats().slots).toBe(n);
    // three rounds of new logins on every key: each leaves the former user's bytes as garbage
    for (let round = 1; round <= 3; round++) for (const r of rows(round)) table.put(r);
    for (let i = 0; i < n; i += 997) {
      expect(table.find(ip(key(i)), 0)).toMatchObject({ id: 3 * n + i + 1, username: user(i, 3) });
      if (i % 2 === 0) expect(table.find({ kind: 'mac', value: `mac-${i}` }, 0)?.username).toBe(user(i, 9));
    }
    expect(table.size).toBe(n + n / 2);
    expect(table.list(0)).toHaveLength(n + n / 2);
    // compacted on the way: what the arena holds is mostly what is in use
    const { arenaBytes, arenaGarbage } = table.stats();
    expect(arenaGarbage).toBeLessThan(arenaBytes);
    expect(arenaBytes).toBe(
      Array.from({ length: n }, (_, i) => key(i).length + user(i, 3).length).reduce((a, b) => a + b, 0) +
        Array.from({ length: n / 2 }, (_, k) => `mac-${2 * k}`.length + user(2 * k, 9).length).reduce(
          (a, b) => a + b,
          0,
        ),
    );
  });

  it('holds no more after every session ends and as many others come, round after round', () => {
    const table = new SessionTable();
    const n = 100_000;
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < n; i++)
        table.put(
          row({
            id: round * n + i + 1,
            key: `10.${round}.${i >> 8}.${i & 255}`,
            username: `someone-with-a-long-name-${i}-${round}`,
            mac: round % 2 ? '02:00:00:00:00:01' : null,
            change: round + 1,
          }),
        );
      const { slots, arenaBytes, arenaGarbage } = table.stats();
      expect({ size: table.size, slots }).toEqual({ size: n, slots: n });
      // the previous round's strings, all garbage after its removals, compacted away by this round's puts
      expect(arenaGarbage).toBeLessThan(arenaBytes);
      for (let i = 0; i < n; i++) table.remove(round * n + i + 1);
      expect(table.size).toBe(0);
      expect(table.list(0)).toEqual([]);
    }
  });

  it('answers as a table of Maps would, over random puts and removals', () => {
    const table = new SessionTable();
    const model = new Map<string, SessionRow>();
    let seed = 11;
    const next = (bound: number) => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) % bound;
    let id = 0;
    for (let step = 0; step < 30_000; step++) {
      const keyOf = `10.0.${next(4)}.${next(250)}`;
      const op = next(10);
      const held = model.get(keyOf);
      if (op < 6) {
        const change = step;
        const username = ['ann', 'bob', 'zoë', 'a-very-long-user-name-indeed@example.org'][next(4)] as string;
        const r = row({
          id: held !== undefined && op < 3 ? held.id : ++id,
          key: keyOf,
          username,
          change,
          last_seen: step,
          mac: op === 5 ? '02:00:00:00:00:0a' : null,
        });
        table.put(r);
        model.set(keyOf, r);
      } else if (held !== undefined) {
        table.remove(held.id);
        model.delete(keyOf);
      }
    }
    expect(table.size).toBe(model.size);
    const expected = [...model.values()]
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .map((r) => ({
        id: r.id,
        key: r.key,
        username: r.username,
        lastSeen: r.last_seen,
        mac: r.mac ?? undefined,
      }));
    expect(
      table
        .list(0)
        .map((s) => ({ id: s.id, key: s.key.value, username: s.username, lastSeen: s.lastSeen, mac: s.mac })),
    ).toEqual(expected);
  });
});

describe('SessionTable scans', () => {
  it('yields every live session once, in no order, and counts by source from the slots', () => {
    const table = new SessionTable();
    table.put(row({ id: 1, key: '10.0.0.1', source: 'api' }));
    table.put(row({ id: 2, key: '10.0.0.2', source: 'portal', expires_at: 50 }));
    table.put(row({ id: 3, key_kind: 'mac', key: '02:00:00:00:00:03', source: 'registration' }));
    table.put(row({ id: 4, key: '10.0.0.4', source: 'agreement', mac: '02:00:00:00:00:03' }));
    table.put(row({ id: 5, key: '10.0.0.5', source: 'portal' }));
    table.remove(5);
    expect([...table.live(49)].map((s) => s.id).sort()).toEqual([1, 2, 3, 4]);
    expect([...table.live(50)].map((s) => s.id).sort()).toEqual([1, 3, 4]);
    expect([...table.live(0)].find((s) => s.id === 4)).toEqual(table.find(ip('10.0.0.4'), 0));
    expect(table.countBySource(['portal', 'registration', 'agreement'], 49)).toBe(3);
    expect(table.countBySource(['portal', 'registration', 'agreement'], 50)).toBe(2);
    expect(table.countBySource(['api'], 0)).toBe(1);
    expect(table.countBySource([], 0)).toBe(0);
  });
});
