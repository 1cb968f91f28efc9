import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { GroupCommit } from '../../../../lib/store/group-commit.ts';
import { SessionStore } from '../../../../lib/store/session-store.ts';
import { useTempDb } from '../../../support/temp-db.ts';

const tmp = useTempDb('doorman-group-commit-');
const ip = (value: string) => ({ kind: 'ip' as const, value });

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
