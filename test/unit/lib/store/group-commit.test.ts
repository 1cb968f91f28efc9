import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { BUSY_DEADLINE_MS, StoreBusyError } from '../../../../lib/store/busy.ts';
import { type BatchTail, GroupCommit } from '../../../../lib/store/group-commit.ts';
import { SessionStore } from '../../../../lib/store/session-store.ts';
import { ManualTimers, settle } from '../../../support/manual-timers.ts';
import { rejection } from '../../../support/thrown.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { ip } from '../../../support/session-keys.ts';

const tmp = useTempDb('doorman-group-commit-');

describe('GroupCommit', () => {
  it('commits the writes of one event-loop turn together, in order, and resolves each with its result', async () => {
    const db = tmp.connect();
    const sessions = new SessionStore(db, new ManualClock());
    const other = new SessionStore(tmp.connect(), new ManualClock());
    const commits = new GroupCommit(db);
    const before = other.dataVersion();
    const inTransaction: boolean[] = [];
    const results = await Promise.all(
      ['alice', 'bob', 'carol'].map((username) =>
        commits.run(() => {
          inTransaction.push(db.inTransaction);
          return sessions.start({ key: ip('10.0.0.1'), username, source: 'api' });
        }),
      ),
    );
    expect(inTransaction).toEqual([true, true, true]);
    expect(results.map((s) => s.username)).toEqual(['alice', 'bob', 'carol']);
    // one commit seen by another connection, and the last login on the address won
    expect(other.dataVersion()).toBe(before + 1);
    expect(other.find(ip('10.0.0.1'))?.username).toBe('carol');
  });

  it('fails only the write that threw; the others are committed', async () => {
    const db = tmp.connect();
    const sessions = new SessionStore(db, new ManualClock());
    const commits = new GroupCommit(db);
    const outcomes = await Promise.allSettled([
      commits.run(() => sessions.start({ key: ip('10.0.0.2'), username: 'dave', source: 'api' })),
      commits.run(() => db.prepare("INSERT INTO sessions (key_kind) VALUES ('nope')").run()),
      commits.run(() => sessions.start({ key: ip('10.0.0.3'), username: 'erin', source: 'api' })),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(sessions.list().map((s) => s.username)).toEqual(['dave', 'erin']);
  });

  it('resolves nothing before the commit: a write is not reported before it is durable', async () => {
    const db = tmp.connect();
    const sessions = new SessionStore(db, new ManualClock());
    const commits = new GroupCommit(db);
    let resolved = false;
    const done = commits.run(() => sessions.start({ key: ip('10.0.0.4'), username: 'frank', source: 'api' }));
    void done.then(() => (resolved = true));
    await Promise.resolve();
    expect(resolved).toBe(false);
    expect(sessions.find(ip('10.0.0.4'))).toBeUndefined();
    await done;
    expect(sessions.find(ip('10.0.0.4'))?.username).toBe('frank');
  });
});

/** A BatchTail that writes one row a flush into its own table and says what happened to it, in order. */
function recordingTail(db: ReturnType<typeof tmp.connect>) {
  db.exec('CREATE TABLE IF NOT EXISTS tail_rows (n INTEGER NOT NULL)');
  const calls: string[] = [];
  const tail: BatchTail = {
    flush: () => {
      calls.push(`flush in transaction: ${db.inTransaction}`);
      db.prepare('INSERT INTO tail_rows (n) VALUES (?)').run(calls.length);
    },
    committed: () => void calls.push('committed'),
    discarded: () => void calls.push('discarded'),
  };
  return { tail, calls, rows: () => db.prepare('SELECT count(*) FROM tail_rows').pluck().get() };
}

describe('GroupCommit: what a batch leaves to the end of its transaction (BatchTail)', () => {
  it('is flushed once a batch, inside the transaction after every write, and told committed before any write resolves', async () => {
    const db = tmp.connect();
    const sessions = new SessionStore(db, new ManualClock());
    const { tail, calls, rows } = recordingTail(db);
    const group = new GroupCommit(db, { tails: [tail] });
    // However the writes are handed to it: a wrapper sees only the write, the batch's tail is the GroupCommit's.
    const commits = { run: <T>(write: () => T) => group.run(write) };
    const login = (value: string, username: string) =>
      commits.run(() => {
        calls.push(`write ${username}`);
        return sessions.start({ key: ip(value), username, source: 'api' });
      });
    const done = [login('10.0.1.1', 'alice'), login('10.0.1.2', 'bob')].map((p) =>
      p.then((s) => calls.push(`resolved ${s.username}`)),
    );
    await Promise.all(done);
    expect(calls).toEqual([
      'write alice',
      'write bob',
      'flush in transaction: true',
      'committed',
      'resolved alice',
      'resolved bob',
    ]);
    expect(rows()).toBe(1);
    await login('10.0.1.3', 'carol');
    expect(rows()).toBe(2);
  });

  it('a flush that throws fails the whole batch: nothing of it is committed, and the tail is told discarded', async () => {
    const db = tmp.connect();
    const sessions = new SessionStore(db, new ManualClock());
    const calls: string[] = [];
    const tail: BatchTail = {
      flush: () => {
        throw new Error('the tail failed');
      },
      committed: () => void calls.push('committed'),
      discarded: () => void calls.push('discarded'),
    };
    const commits = new GroupCommit(db, { tails: [tail] });
    const outcomes = await Promise.allSettled([
      commits.run(() => sessions.start({ key: ip('10.0.1.3'), username: 'carol', source: 'api' })),
      commits.run(() => sessions.start({ key: ip('10.0.1.4'), username: 'dave', source: 'api' })),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    expect(sessions.list()).toEqual([]);
    expect(calls).toEqual(['discarded']);
  });
});

describe('GroupCommit when a write takes the transaction down (SQLITE_FULL)', () => {
  it('fails the whole batch: the writes after it do not run outside the transaction, nothing stands', async () => {
    const db = tmp.connect();
    const sessions = new SessionStore(db, new ManualClock());
    const { tail, calls, rows } = recordingTail(db);
    const commits = new GroupCommit(db, { tails: [tail] });
    db.exec('CREATE TABLE filler (x BLOB)');
    // A disk that fills up: SQLite rolls the whole transaction back, not just the statement.
    db.pragma(`max_page_count = ${(db.pragma('page_count', { simple: true }) as number) + 40}`);
    const login = (value: string, username: string) =>
      commits.run(() => sessions.start({ key: ip(value), username, source: 'api' }));
    const outcomes = await Promise.allSettled([
      login('10.0.2.1', 'alice'),
      commits.run(() => db.prepare('INSERT INTO filler VALUES (?)').run(Buffer.alloc(1_000_000))),
      login('10.0.2.2', 'bob'),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(sessions.list()).toEqual([]);
    expect(rows()).toBe(0);
    expect(calls).toEqual(['discarded']);
  });
});

describe('GroupCommit while another connection holds the write lock', () => {
  /** The web app's handle (busy_timeout 0, as serve opens it), a holder of the lock, timers that wait to be told. */
  function locked() {
    const clock = new ManualClock();
    const timers = new ManualTimers(clock);
    const db = tmp.connect({ busyTimeoutMs: 0 });
    const holder = tmp.connect();
    holder.exec('BEGIN IMMEDIATE');
    const sessions = new SessionStore(db, clock);
    const commits = new GroupCommit(db, { clock, schedule: timers.schedule });
    const login = (ip: string, username: string) =>
      commits.run(() => sessions.start({ key: { kind: 'ip', value: ip }, username, source: 'api' }));
    return { clock, timers, db, holder, sessions, commits, login };
  }

  it('does not block: the batch waits on a timer, and is committed once the lock is free', async () => {
    const { timers, holder, sessions, login } = locked();
    let settled = false;
    const first = login('10.1.0.1', 'alice').finally(() => (settled = true));
    await settle();
    expect(settled).toBe(false);
    expect(timers.pending).toBe(1);
    // Writes asked for while it waits go in the same retry, after it.
    const second = login('10.1.0.1', 'bob');
    await timers.fireNext();
    await timers.fireNext();
    expect(settled).toBe(false);
    expect(sessions.find(ip('10.1.0.1'))).toBeUndefined();

    holder.exec('ROLLBACK');
    await timers.fireNext();
    expect((await first).username).toBe('alice');
    expect((await second).username).toBe('bob');
    expect(sessions.find(ip('10.1.0.1'))?.username).toBe('bob');
    expect(timers.pending).toBe(0);
  });

  it('gives a write up with StoreBusyError once it has waited the deadline; later ones keep waiting', async () => {
    const { clock, timers, holder, sessions, login } = locked();
    const early = rejection(login('10.1.0.2', 'carol'));
    await settle();
    clock.advance(BUSY_DEADLINE_MS - 1000);
    const late = login('10.1.0.3', 'dave');
    await timers.fireUntil(() => false, clock.now() + 1000);
    const gaveUp = await early;
    expect(gaveUp).toBeInstanceOf(StoreBusyError);
    expect((gaveUp as StoreBusyError).waitedMs).toBeGreaterThanOrEqual(BUSY_DEADLINE_MS);
    expect(timers.pending).toBe(1);

    holder.exec('ROLLBACK');
    await timers.fireNext();
    expect((await late).username).toBe('dave');
    expect(sessions.find(ip('10.1.0.2'))).toBeUndefined();
  });

  it("a batch tried again is flushed again: the busy try's tail is discarded, the one that commits is flushed once", async () => {
    const { clock, db, timers, holder, sessions } = locked();
    holder.exec('ROLLBACK');
    const { tail, calls, rows } = recordingTail(db);
    holder.exec('BEGIN IMMEDIATE');
    const commits = new GroupCommit(db, { clock, schedule: timers.schedule, tails: [tail] });
    const waited = commits.run(() =>
      sessions.start({ key: ip('10.1.0.6'), username: 'gina', source: 'api' }),
    );
    await settle();
    expect(calls).toEqual(['discarded']);
    holder.exec('ROLLBACK');
    await timers.fireNext();
    await waited;
    expect(calls).toEqual(['discarded', 'flush in transaction: true', 'committed']);
    expect(rows()).toBe(1);
  });

  it('after a busy spell commits again at the first try', async () => {
    const { timers, holder, login } = locked();
    const waited = login('10.1.0.4', 'erin');
    await settle();
    holder.exec('ROLLBACK');
    await timers.fireNext();
    await waited;
    expect((await login('10.1.0.5', 'frank')).username).toBe('frank');
    expect(timers.pending).toBe(0);
  });
});
