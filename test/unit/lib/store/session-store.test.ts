import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { SessionStore } from '../../../../lib/store/session-store.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { ip } from '../../../support/session-keys.ts';

/**
 * What SessionStore does beyond the session repository's contract (contract/sessions.ts, run on SQLite by
 * sqlite-contract.test.ts beside this file): the columns the helpers read, the schema's own checks,
 * data_version, and several processes writing one file.
 */

const WORKER = join(import.meta.dirname, 'fixtures', 'db-worker.ts');
const T0 = Date.UTC(2026, 0, 1);

const tmp = useTempDb('doorman-sessions-');
let clock: ManualClock;
beforeEach(() => {
  clock = new ManualClock(T0);
});

describe('the sessions table', () => {
  it('keeps the hard expiry and the idle limit in their own columns, NULL for none', () => {
    const db = tmp.connect();
    const store = new SessionStore(db, clock);
    store.start({
      key: ip('10.0.0.5'),
      username: 'alice',
      source: 'api',
      expiresAt: T0 + 3_600_000,
      idleTimeoutMs: 900_000,
    });
    store.start({ key: ip('10.0.0.6'), username: 'bob', source: 'portal', idleTimeoutMs: 60_000 });
    expect(db.prepare('SELECT key, expires_at, idle_timeout FROM sessions ORDER BY key').all()).toEqual([
      { key: '10.0.0.5', expires_at: T0 + 3_600_000, idle_timeout: 900_000 },
      { key: '10.0.0.6', expires_at: null, idle_timeout: 60_000 },
    ]);
  });

  it('refuses an idle limit that is not a positive whole number of ms (CHECK, STRICT)', () => {
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
});

describe('replaced', () => {
  it("names whoever find() would find on the key (user and source), nobody on a free or ended one's", () => {
    const store = new SessionStore(tmp.connect(), clock);
    store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'portal' });
    store.start({ key: ip('10.0.0.6'), username: 'bob', source: 'api', expiresAt: T0 + 1000 });
    expect(store.replaced(ip('10.0.0.5'))).toEqual({ username: 'alice', source: 'portal' });
    expect(store.replaced(ip('10.0.0.6'))).toEqual({ username: 'bob', source: 'api' });
    expect(store.replaced(ip('10.0.0.7'))).toBeUndefined();
    expect(store.replaced({ kind: 'mac', value: '10.0.0.5' })).toBeUndefined();
    clock.advance(1000);
    expect(store.find(ip('10.0.0.6'))).toBeUndefined();
    expect(store.replaced(ip('10.0.0.6'))).toBeUndefined();
  });
});

describe('startReplacing', () => {
  it('renews in place (same id, new start, new limits within the lifetime); anything else gets a new row', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const key = ip('10.0.0.5');
    const fresh = store.startReplacing({ key, username: 'alice', source: 'api', idleTimeoutMs: 1000 });
    expect(fresh.replaced).toBeUndefined();
    clock.advance(500);
    const renewed = store.startReplacing({
      key,
      username: 'alice',
      source: 'api',
      expiresAt: T0 + 10_000,
      lifetimeMs: 2000,
    });
    expect(renewed.replaced).toBeUndefined();
    expect(renewed.session).toMatchObject({ id: fresh.session.id, createdAt: T0 + 500, lastSeen: T0 + 500 });
    expect(renewed.session.expiresAt).toBe(T0 + 2500);
    expect(renewed.session.idleTimeoutMs).toBeUndefined();
    const taken = store.startReplacing({ key, username: 'bob', source: 'api' });
    expect(taken.replaced).toEqual({ username: 'alice', source: 'api' });
    expect(taken.session.id).toBeGreaterThan(fresh.session.id);
    expect(store.list().map((s) => [s.id, s.username])).toEqual([[taken.session.id, 'bob']]);
  });
});

describe('the session a start returns', () => {
  it('is the one stored, every field, whether new, renewed or replacing (made from the input, not read back)', () => {
    const store = new SessionStore(tmp.connect(), clock);
    const mac = 'aa:bb:cc:dd:ee:ff';
    const starts = [
      () => store.start({ key: ip('10.0.0.5'), username: 'alice', source: 'portal' }),
      () =>
        store.start({
          key: { kind: 'mac', value: mac },
          username: 'carol',
          source: 'registration',
          expiresAt: T0 + 9000,
        }),
      () =>
        store.start({
          key: ip('10.0.0.6'),
          username: 'carol',
          source: 'registration',
          mac,
          idleTimeoutMs: 60_000,
          expiresAt: T0 + 9000,
          lifetimeMs: 4000,
        }),
      () =>
        store.startReplacing({ key: ip('10.0.0.7'), username: 'dave', source: 'api', idleTimeoutMs: 1000 })
          .session,
      () =>
        store.startReplacing({ key: ip('10.0.0.7'), username: 'dave', source: 'api', lifetimeMs: 3000 })
          .session,
      () =>
        store.startReplacing({ key: ip('10.0.0.7'), username: 'erin', source: 'api', expiresAt: T0 + 99 })
          .session,
    ];
    for (const start of starts) {
      clock.advance(10);
      const session = start();
      expect(store.find(session.key)).toStrictEqual(session);
    }
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
