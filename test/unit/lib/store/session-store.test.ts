import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import type { Db } from '../../../../lib/store/database.ts';
import { SessionStore } from '../../../../lib/store/session-store.ts';
import type { SessionKey } from '../../../../lib/store/session-store.ts';
import { useTempDb } from '../../../support/temp-db.ts';

const WORKER = join(import.meta.dirname, 'fixtures', 'db-worker.ts');
const T0 = Date.UTC(2026, 0, 1);

const ip = (value: string): SessionKey => ({ kind: 'ip', value });
const mac = (value: string): SessionKey => ({ kind: 'mac', value });

const tmp = useTempDb('doorman-sessions-');
let clock: ManualClock;
beforeEach(() => {
  clock = new ManualClock(T0);
});

const rowCount = (db: Db) => db.prepare('SELECT count(*) FROM sessions').pluck().get() as number;

describe('start / find / end / list / clear', () => {
  it('start returns the new session and find returns the same', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const started = store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    expect(started).toEqual({
      id: expect.any(Number),
      key: { kind: 'ip', value: '10.0.0.5' },
      username: 'alice',
      source: 'api',
      createdAt: T0,
      lastSeen: T0,
      expiresAt: undefined,
      idleTimeoutMs: undefined,
    });
    expect(store.find(ip('10.0.0.5'))).toStrictEqual(started);
  });

  it('keeps a hard expiry', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const started = store.start({
      key: ip('10.0.0.5'),
      username: 'alice',
      source: 'portal',
      expiresAt: T0 + 60_000,
    });
    expect(started.expiresAt).toBe(T0 + 60_000);
    expect(store.find(ip('10.0.0.5'))?.expiresAt).toBe(T0 + 60_000);
  });

  it('an address binding keeps its MAC, and ends at start + lifetimeMs or its expiry, whichever is first', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const binding = { username: 'carol', source: 'registration', mac: '52:54:00:12:34:56' } as const;
    const early = store.start({ ...binding, key: ip('fd00::5'), expiresAt: T0 + 10_000, lifetimeMs: 60_000 });
    const late = store.start({ ...binding, key: ip('fd00::6'), expiresAt: T0 + 90_000, lifetimeMs: 60_000 });
    const none = store.start({ ...binding, key: ip('fd00::7'), lifetimeMs: 60_000 });
    expect([early.expiresAt, late.expiresAt, none.expiresAt]).toEqual([
      T0 + 10_000,
      T0 + 60_000,
      T0 + 60_000,
    ]);
    expect(store.find(ip('fd00::6'))).toMatchObject({ mac: '52:54:00:12:34:56', expiresAt: T0 + 60_000 });
    // Traffic does not move it.
    clock.advance(59_999);
    store.touch(new Map([[late.id, clock.now()]]));
    clock.advance(1);
    expect(store.find(ip('fd00::6'))).toBeUndefined();
  });

  it('keeps an idle limit beside the hard expiry, each per session', () => {
    const db = tmp.connect();
    const store = new SessionStore(db, clock);
    const both = store.start({
      key: ip('10.0.0.5'),
      username: 'alice',
      source: 'api',
      expiresAt: T0 + 3_600_000,
      idleTimeoutMs: 900_000,
    });
    const idleOnly = store.start({
      key: ip('10.0.0.6'),
      username: 'bob',
      source: 'portal',
      idleTimeoutMs: 60_000,
    });
    expect(both).toMatchObject({ expiresAt: T0 + 3_600_000, idleTimeoutMs: 900_000 });
    expect(store.find(ip('10.0.0.5'))).toStrictEqual(both);
    expect(store.find(ip('10.0.0.6'))).toStrictEqual(idleOnly);
    expect(idleOnly).toMatchObject({ expiresAt: undefined, idleTimeoutMs: 60_000 });
    expect(db.prepare('SELECT key, expires_at, idle_timeout FROM sessions ORDER BY key').all()).toEqual([
      { key: '10.0.0.5', expires_at: T0 + 3_600_000, idle_timeout: 900_000 },
      { key: '10.0.0.6', expires_at: null, idle_timeout: 60_000 },
    ]);
  });

  it('a new login on the key replaces the limits with its own', () => {
    const store = new SessionStore(tmp.connect(), clock);
    store.start({
      key: ip('10.0.0.5'),
      username: 'alice',
      source: 'api',
      expiresAt: T0 + 1000,
      idleTimeoutMs: 5000,
    });
    const bob = store.start({ key: ip('10.0.0.5'), username: 'bob', source: 'api' });
    expect(bob).toMatchObject({ expiresAt: undefined, idleTimeoutMs: undefined });
    expect(store.find(ip('10.0.0.5'))).toStrictEqual(bob);
  });

  it('refuses an idle limit that is not a positive whole number of ms', () => {
    const store = new SessionStore(tmp.connect(), clock);
    for (const idleTimeoutMs of [0, -1]) {
      expect(() =>
        store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api', idleTimeoutMs }),
      ).toThrow('CHECK constraint failed: idle_timeout > 0');
    }
    expect(() =>
      store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api', idleTimeoutMs: 1.5 }),
    ).toThrow('cannot store REAL value in INTEGER column sessions.idle_timeout');
    expect(store.list()).toEqual([]);
  });

  it('find and list still return a session that looks idle from the DB alone (the helper judges idleness)', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const s = store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api', idleTimeoutMs: 1000 });
    clock.advance(10_000);
    expect(store.find(ip('10.0.0.5'))).toStrictEqual(s);
    expect(store.list()).toStrictEqual([s]);
  });

  it('find on a key with no session is undefined', () => {
    const store = new SessionStore(tmp.connect(), clock);
    store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    expect(store.find(ip('10.0.0.6'))).toBeUndefined();
    expect(store.find(mac('aa:bb:cc:dd:ee:ff'))).toBeUndefined();
  });

  it('end returns the ended session once, then there is none', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const started = store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    expect(store.end(ip('10.0.0.5'))).toEqual(started);
    expect(store.find(ip('10.0.0.5'))).toBeUndefined();
    expect(store.end(ip('10.0.0.5'))).toBeUndefined();
  });

  it('list gives every live session ordered by kind then key', () => {
    const store = new SessionStore(tmp.connect(), clock);
    store.start({ key: ip('10.0.0.9'), username: 'carol', source: 'agreement' });
    store.start({ key: mac('aa:bb:cc:dd:ee:ff'), username: 'dave', source: 'registration' });
    store.start({ key: ip('10.0.0.10'), username: 'alice', source: 'api' });
    expect(store.list().map((s) => [s.key.kind, s.key.value, s.username, s.source])).toEqual([
      ['ip', '10.0.0.10', 'alice', 'api'],
      ['ip', '10.0.0.9', 'carol', 'agreement'],
      ['mac', 'aa:bb:cc:dd:ee:ff', 'dave', 'registration'],
    ]);
  });

  it('clear ends every session and says how many', () => {
    const store = new SessionStore(tmp.connect(), clock);
    store.start({ key: ip('10.0.0.1'), username: 'a', source: 'api' });
    store.start({ key: ip('10.0.0.2'), username: 'b', source: 'api', expiresAt: T0 - 1 });
    store.start({ key: mac('aa:bb:cc:dd:ee:ff'), username: 'c', source: 'api' });
    expect(store.clear()).toBe(3);
    expect(store.list()).toEqual([]);
    expect(store.clear()).toBe(0);
  });
});

describe('one live identity per key', () => {
  it('a second start on the same IP replaces the first, with a new id', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const alice = store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    clock.advance(1000);
    const bob = store.start({ key: ip('10.0.0.5'), username: 'bob', source: 'portal' });
    expect(bob.id).toBeGreaterThan(alice.id);
    expect(bob).toMatchObject({
      username: 'bob',
      source: 'portal',
      createdAt: T0 + 1000,
      lastSeen: T0 + 1000,
    });
    expect(store.find(ip('10.0.0.5'))).toEqual(bob);
    expect(store.list()).toEqual([bob]);
  });

  it('the same user logging in again also gets a new session id', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const first = store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    const second = store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    expect(second.id).not.toBe(first.id);
    expect(store.list()).toHaveLength(1);
  });

  it('an id is not reused even after the newest session is ended', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const first = store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    store.end(ip('10.0.0.5'));
    const second = store.start({ key: ip('10.0.0.5'), username: 'bob', source: 'api' });
    expect(second.id).toBeGreaterThan(first.id);
  });

  it('IP and MAC keys are independent, even with the same text', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const byIp = store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    const byMac = store.start({ key: mac('aa:bb:cc:dd:ee:ff'), username: 'bob', source: 'registration' });
    const sameTextIp = store.start({ key: ip('same'), username: 'carol', source: 'api' });
    const sameTextMac = store.start({ key: mac('same'), username: 'dave', source: 'api' });
    expect(store.list()).toHaveLength(4);

    expect(store.end(mac('aa:bb:cc:dd:ee:ff'))).toEqual(byMac);
    expect(store.find(ip('10.0.0.5'))).toEqual(byIp);
    expect(store.end(ip('same'))).toEqual(sameTextIp);
    expect(store.find(mac('same'))).toEqual(sameTextMac);
  });
});

describe('expiry (ManualClock, no sleeping)', () => {
  it('a session is live until expiresAt, and gone from find and list at expiresAt', () => {
    const store = new SessionStore(tmp.connect(), clock);
    store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'portal', expiresAt: T0 + 1000 });
    const forever = store.start({ key: ip('10.0.0.6'), username: 'bob', source: 'api' });

    clock.advance(999);
    expect(store.find(ip('10.0.0.5'))?.username).toBe('alice');
    expect(store.list().map((s) => s.username)).toEqual(['alice', 'bob']);

    clock.advance(1);
    expect(store.find(ip('10.0.0.5'))).toBeUndefined();
    expect(store.list()).toEqual([forever]);

    clock.advance(365 * 86_400_000);
    expect(store.find(ip('10.0.0.6'))).toEqual(forever);
  });

  it('purgeExpired deletes expired rows only, and says how many', () => {
    const db = tmp.connect();
    const store = new SessionStore(db, clock);
    store.start({ key: ip('10.0.0.1'), username: 'a', source: 'api', expiresAt: T0 + 1000 });
    store.start({ key: ip('10.0.0.2'), username: 'b', source: 'api', expiresAt: T0 + 2000 });
    store.start({ key: ip('10.0.0.3'), username: 'c', source: 'api' });

    expect(store.purgeExpired()).toBe(0);
    clock.advance(1000);
    expect(rowCount(db)).toBe(3);
    expect(store.purgeExpired()).toBe(1);
    expect(rowCount(db)).toBe(2);
    expect(store.purgeExpired()).toBe(0);
    clock.advance(1000);
    expect(store.purgeExpired()).toBe(1);
    expect(store.list().map((s) => s.username)).toEqual(['c']);
  });

  it('an expired session still ends (and is returned), and a new start on its key works', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const old = store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api', expiresAt: T0 + 10 });
    clock.advance(10);
    expect(store.end(ip('10.0.0.5'))).toEqual(old);
    store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api', expiresAt: T0 + 10 });
    const fresh = store.start({ key: ip('10.0.0.5'), username: 'bob', source: 'api' });
    expect(store.find(ip('10.0.0.5'))).toEqual(fresh);
  });
});

describe('touch', () => {
  it('writes a batch of last-seen times at once', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const a = store.start({ key: ip('10.0.0.1'), username: 'a', source: 'api' });
    const b = store.start({ key: ip('10.0.0.2'), username: 'b', source: 'api' });
    const c = store.start({ key: ip('10.0.0.3'), username: 'c', source: 'api' });
    store.touch(
      new Map([
        [a.id, T0 + 500],
        [b.id, T0 + 700],
      ]),
    );
    expect(store.find(ip('10.0.0.1'))?.lastSeen).toBe(T0 + 500);
    expect(store.find(ip('10.0.0.2'))?.lastSeen).toBe(T0 + 700);
    expect(store.find(ip('10.0.0.3'))).toEqual(c);
  });

  it('never moves last_seen backwards', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const a = store.start({ key: ip('10.0.0.1'), username: 'a', source: 'api' });
    store.touch(new Map([[a.id, T0 + 5000]]));
    store.touch(new Map([[a.id, T0 + 3000]]));
    expect(store.find(ip('10.0.0.1'))?.lastSeen).toBe(T0 + 5000);
    store.touch(new Map([[a.id, T0 - 1]]));
    expect(store.find(ip('10.0.0.1'))?.lastSeen).toBe(T0 + 5000);
  });

  it('ignores the id of a replaced session: a late write cannot land on the new user', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const alice = store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    clock.advance(100);
    const bob = store.start({ key: ip('10.0.0.5'), username: 'bob', source: 'api' });
    store.touch(new Map([[alice.id, T0 + 99_999]]));
    expect(store.find(ip('10.0.0.5'))).toEqual(bob);
  });

  it('ignores unknown ids and an empty batch', () => {
    const db = tmp.connect();
    const store = new SessionStore(db, clock);
    const a = store.start({ key: ip('10.0.0.1'), username: 'a', source: 'api' });
    store.touch(new Map());
    store.touch(new Map([[a.id + 1000, T0 + 1]]));
    expect(store.list()).toEqual([a]);
    expect(rowCount(db)).toBe(1);
  });
});

describe('dataVersion', () => {
  it("changes when another handle commits, and not for this handle's own reads or writes", () => {
    const mine = new SessionStore(tmp.connect(), clock);
    const theirs = new SessionStore(tmp.connect(), clock);
    const v0 = mine.dataVersion();

    mine.find(ip('10.0.0.5'));
    mine.list();
    expect(mine.dataVersion()).toBe(v0);
    mine.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    expect(mine.dataVersion()).toBe(v0);

    theirs.start({ key: ip('10.0.0.6'), username: 'bob', source: 'api' });
    const v1 = mine.dataVersion();
    expect(v1).not.toBe(v0);
    expect(mine.dataVersion()).toBe(v1);

    theirs.touch(new Map([[theirs.find(ip('10.0.0.6'))?.id ?? -1, T0 + 1]]));
    expect(mine.dataVersion()).not.toBe(v1);
  });

  it('does not change for reads on another handle', () => {
    const mine = new SessionStore(tmp.connect(), clock);
    const theirs = new SessionStore(tmp.connect(), clock);
    theirs.start({ key: ip('10.0.0.6'), username: 'bob', source: 'api' });
    const v0 = mine.dataVersion();
    theirs.find(ip('10.0.0.6'));
    theirs.list();
    expect(mine.dataVersion()).toBe(v0);
  });

  it('a read-only handle sees the change too and can answer lookups', () => {
    const writer = new SessionStore(tmp.connect(), clock);
    const reader = new SessionStore(tmp.connect({ readonly: true }), clock);
    const v0 = reader.dataVersion();
    const started = writer.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    expect(reader.dataVersion()).not.toBe(v0);
    expect(reader.find(ip('10.0.0.5'))).toEqual(started);
    expect(() => reader.start({ key: ip('10.0.0.6'), username: 'bob', source: 'api' })).toThrow(
      'attempt to write a readonly database',
    );
  });
});

describe('several processes on one file', () => {
  // Mirrors fixtures/db-worker.ts "write": sessions on 10.<worker>.x.y; every 10th replaced, every 7th ended.
  const WRITERS = [1, 2, 3];
  const PER_WRITER = 2000;
  const workerIp = (worker: number, i: number) => `10.${worker}.${i >> 8}.${i & 0xff}`;

  interface Outcome {
    status: number | null;
    stdout: string;
    stderr: string;
  }

  function runWriter(worker: number): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [WORKER, 'write', tmp.path, String(worker), String(PER_WRITER)], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      child.on('error', reject);
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });
  }

  it('writers in child processes and a reader here: no SQLITE_BUSY, exact final counts', async () => {
    const store = new SessionStore(tmp.connect(), clock);
    const readErrors: string[] = [];
    const versions = new Set<number>();
    let reads = 0;

    let running = true;
    const writers = Promise.all(WRITERS.map(runWriter)).finally(() => {
      running = false;
    });

    while (running) {
      try {
        versions.add(store.dataVersion());
        const worker = WRITERS[reads % WRITERS.length] as number;
        const i = (reads * 37) % PER_WRITER;
        const found = store.find(ip(workerIp(worker, i)));
        // Whatever the moment, a session on a key belongs to that key's user (first or replacement).
        if (found !== undefined && !new RegExp(`^w${worker}-[ur]${i}$`).test(found.username)) {
          readErrors.push(`${workerIp(worker, i)} has ${found.username}`);
        }
        if (reads % 50 === 0) store.list();
        reads++;
      } catch (error) {
        readErrors.push(`${(error as { code?: string }).code}: ${(error as Error).message}`);
      }
      await nextTurn();
    }
    const outcomes = await writers;

    const ended = Math.ceil(PER_WRITER / 7);
    const done = { started: PER_WRITER, replaced: PER_WRITER / 10, ended, touchBatches: PER_WRITER / 100 };
    expect(outcomes).toEqual(
      WRITERS.map(() => ({ status: 0, stdout: `${JSON.stringify(done)}\n`, stderr: '' })),
    );
    expect(readErrors).toEqual([]);
    expect(reads).toBeGreaterThan(0);
    // The reader saw other processes' commits while it was reading: the writes really were concurrent.
    expect(versions.size).toBeGreaterThan(1);

    const sessions = store.list();
    expect(sessions).toHaveLength(WRITERS.length * (PER_WRITER - ended));
    for (const worker of WRITERS) {
      const mine = new Map(
        sessions.filter((s) => s.key.value.startsWith(`10.${worker}.`)).map((s) => [s.key.value, s]),
      );
      expect(mine.size).toBe(PER_WRITER - ended);
      for (let i = 0; i < PER_WRITER; i++) {
        const s = mine.get(workerIp(worker, i));
        if (i % 7 === 0) expect(s).toBeUndefined();
        else if (i % 10 === 0) expect(s).toMatchObject({ username: `w${worker}-r${i}`, source: 'portal' });
        else expect(s).toMatchObject({ username: `w${worker}-u${i}`, source: 'api' });
      }
    }
  });
});

describe('endBySource (Clear current sessions)', () => {
  it('ends the sessions of the given sources only: API sessions stay', () => {
    const store = new SessionStore(tmp.connect(), clock);
    store.start({ key: ip('10.0.0.1'), username: 'api-user', source: 'api' });
    store.start({ key: ip('10.0.0.2'), username: 'alice', source: 'portal' });
    store.start({ key: mac('aa:bb:cc:dd:ee:01'), username: 'bob', source: 'registration' });
    store.start({ key: ip('10.0.0.3'), username: 'agreement:10.0.0.3', source: 'agreement' });
    expect(store.endBySource(['portal', 'registration', 'agreement'])).toBe(3);
    expect(store.list().map((s) => [s.username, s.source])).toEqual([['api-user', 'api']]);
    expect(store.endBySource(['portal'])).toBe(0);
    expect(store.endBySource([])).toBe(0);
    expect(store.list()).toHaveLength(1);
  });
});
