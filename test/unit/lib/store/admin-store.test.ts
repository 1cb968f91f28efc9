import { createHash } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { verifyPassword } from '../../../../lib/security/password-hash.ts';
import { AdminStore, DEFAULT_SESSION_TTL_MS } from '../../../../lib/store/admin-store.ts';
import { BUSY_DEADLINE_MS, StoreBusyError } from '../../../../lib/store/busy.ts';
import type { Db } from '../../../../lib/store/database.ts';
import { ManualTimers } from '../../../support/manual-timers.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { rejection } from '../../../support/thrown.ts';

const T0 = Date.UTC(2026, 0, 1);
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/**
 * What AdminStore keeps in its tables and does while another process holds the write lock. What every store
 * does with administrators is the contract (contract/admins.ts), run on SQLite by sqlite-contract.test.ts.
 */

const tmp = useTempDb('doorman-admins-');
let clock: ManualClock;
let db: Db;
let store: AdminStore;
beforeEach(() => {
  clock = new ManualClock(T0);
  db = tmp.connect();
  store = new AdminStore(db, clock);
});

describe('the admin tables', () => {
  it('stores a salted scrypt hash, never the password', async () => {
    await store.setPassword('root', 'correct horse');
    const row = db.prepare('SELECT * FROM admin_users').get() as Record<string, unknown>;
    expect(String(row.password_hash)).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(JSON.stringify(row)).not.toContain('correct horse');
    expect(await verifyPassword('correct horse', String(row.password_hash))).toBe(true);
  });

  it('stores only the SHA-256 of a sign-in token', async () => {
    await store.setPassword('root', 'pw');
    const session = store.createSession('root');
    const row = db.prepare('SELECT * FROM admin_sessions').get() as Record<string, unknown>;
    expect(row.token_hash).toEqual(sha256(session.token));
    expect(JSON.stringify(row)).not.toContain(session.token);
  });

  it('drops expired rows when a new session starts', async () => {
    await store.setPassword('root', 'pw');
    store.createSession('root');
    clock.advance(DEFAULT_SESSION_TTL_MS);
    store.createSession('root');
    expect(db.prepare('SELECT COUNT(*) AS n FROM admin_sessions').get()).toEqual({ n: 1 });
  });

  it('cannot start a session for an admin that does not exist (the foreign key)', () => {
    expect(() => store.createSession('nobody')).toThrow(/FOREIGN KEY/);
  });
});

describe('sign-in while another connection holds the write lock', () => {
  /** A store on a handle that never waits in SQLite (as the web app's), with timers the test fires. */
  async function locked() {
    await store.setPassword('root', 'pw');
    const timers = new ManualTimers(clock);
    const web = new AdminStore(tmp.connect({ busyTimeoutMs: 0 }), clock, { schedule: timers.schedule });
    const holder = tmp.connect();
    holder.exec('BEGIN IMMEDIATE');
    return { timers, web, holder };
  }

  it('waits on a timer, not in SQLite, and signs in once the lock is free', async () => {
    const { timers, web, holder } = await locked();
    const signingIn = web.signIn('root', 'pw');
    await timers.untilWaiting(); // scrypt runs off the event loop first
    await timers.fireNext();
    expect(timers.pending).toBe(1);
    holder.exec('ROLLBACK');
    await timers.fireNext();
    const session = await signingIn;
    expect(session && store.findSession(session.token)?.userName).toBe('root');
  });

  it('gives up with StoreBusyError after the deadline, having made no session', async () => {
    const { timers, web, holder } = await locked();
    const outcome = rejection(web.signIn('root', 'pw'));
    await timers.untilWaiting(); // scrypt runs off the event loop first
    while (await timers.fireNext());
    expect(await outcome).toBeInstanceOf(StoreBusyError);
    holder.exec('ROLLBACK');
    expect(db.prepare('SELECT count(*) FROM admin_sessions').pluck().get()).toBe(0);
    expect(clock.now() - T0).toBeGreaterThanOrEqual(BUSY_DEADLINE_MS);
  });
});
