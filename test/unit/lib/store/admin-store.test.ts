import { createHash } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../lib/clock.ts';
import { InvalidInputError } from '../../../../lib/errors.ts';
import { verifyPassword } from '../../../../lib/security/password-hash.ts';
import { AdminStore, DEFAULT_SESSION_TTL_MS } from '../../../../lib/store/admin-store.ts';
import { BUSY_DEADLINE_MS, StoreBusyError } from '../../../../lib/store/busy.ts';
import type { Db } from '../../../../lib/store/database.ts';
import { ManualTimers } from '../../../support/manual-timers.ts';
import { useTempDb } from '../../../support/temp-db.ts';
import { rejection, thrown } from '../../../support/thrown.ts';

const T0 = Date.UTC(2026, 0, 1);
const HOUR = 3600_000;
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

const tmp = useTempDb('doorman-admins-');
let clock: ManualClock;
let db: Db;
let store: AdminStore;
beforeEach(() => {
  clock = new ManualClock(T0);
  db = tmp.connect();
  store = new AdminStore(db, clock);
});

describe('admin users', () => {
  it('creates an admin, then changes their password; list shows names and times only', async () => {
    expect(await store.setPassword('root', 'first secret')).toEqual({ created: true });
    clock.advance(HOUR);
    expect(await store.setPassword('root', 'second secret')).toEqual({ created: false });
    expect(store.list()).toEqual([{ name: 'root', createdAt: T0, updatedAt: T0 + HOUR }]);
    expect(await store.verify('root', 'second secret')).toBe(true);
    expect(await store.verify('root', 'first secret')).toBe(false);
  });

  it('stores a salted scrypt hash, never the password', async () => {
    await store.setPassword('root', 'correct horse');
    const row = db.prepare('SELECT * FROM admin_users').get() as Record<string, unknown>;
    expect(String(row.password_hash)).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(JSON.stringify(row)).not.toContain('correct horse');
    expect(await verifyPassword('correct horse', String(row.password_hash))).toBe(true);
  });

  it('refuses a bad name or an unusable password and creates nothing', async () => {
    for (const name of ['', ' root', 'a b', 'x'.repeat(65), 'ro\not', '<script>']) {
      const error = await store.setPassword(name, 'pw').catch((e: unknown) => e);
      expect(error, name).toBeInstanceOf(InvalidInputError);
      expect(error).toMatchObject({ field: 'user' });
    }
    for (const password of ['', 'x'.repeat(1025)]) {
      const error = await store.setPassword('root', password).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'INVALID_INPUT', field: 'password' });
    }
    expect(store.list()).toEqual([]);
  });

  it('verify: false for a wrong password, an unknown name, an empty or oversized password', async () => {
    await store.setPassword('root', 'pw');
    expect(await store.verify('root', 'pw')).toBe(true);
    expect(await store.verify('root', 'PW')).toBe(false);
    expect(await store.verify('nobody', 'pw')).toBe(false);
    expect(await store.verify('Root', 'pw')).toBe(false);
    expect(await store.verify('root', '')).toBe(false);
    expect(await store.verify('root', 'x'.repeat(5000))).toBe(false);
  });

  it('verify costs a scrypt run for an unknown name as for a known one', async () => {
    await store.setPassword('root', 'pw');
    await store.verify('nobody', 'warm-up'); // the dummy hash is made once, on first use
    const time = async (name: string) => {
      const started = performance.now();
      for (let i = 0; i < 3; i++) await store.verify(name, 'wrong');
      return performance.now() - started;
    };
    const known = await time('root');
    const unknown = await time('nobody');
    // Not a timing-attack test (too noisy for that): only that the unknown name is not a shortcut.
    expect(unknown).toBeGreaterThan(known / 4);
  });

  it('remove deletes the admin and their sessions; an unknown name is NOT_FOUND', async () => {
    await store.setPassword('root', 'pw');
    await store.setPassword('other', 'pw');
    const { token } = store.createSession('root');
    const kept = store.createSession('other');
    store.remove('root');
    expect(store.list().map((a) => a.name)).toEqual(['other']);
    expect(store.findSession(token)).toBeUndefined();
    expect(store.findSession(kept.token)).toMatchObject({ userName: 'other' });
    const error = thrown(() => store.remove('root'));
    expect(error.code).toBe('NOT_FOUND');
    expect(error.message).toBe('user: no admin named "root"');
  });
});

describe('admin sessions', () => {
  beforeEach(async () => {
    await store.setPassword('root', 'pw');
  });

  it('returns a 256-bit token once; only its SHA-256 is stored', () => {
    const session = store.createSession('root');
    expect(session.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(session.token, 'base64url')).toHaveLength(32);
    expect(session.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(session.csrfToken).not.toBe(session.token);
    expect(session).toMatchObject({
      userName: 'root',
      createdAt: T0,
      expiresAt: T0 + DEFAULT_SESSION_TTL_MS,
    });
    const row = db.prepare('SELECT * FROM admin_sessions').get() as Record<string, unknown>;
    expect(row.token_hash).toEqual(sha256(session.token));
    expect(JSON.stringify(row)).not.toContain(session.token);
  });

  it('finds a live session by its token, with its CSRF token, and nothing for any other string', () => {
    const session = store.createSession('root');
    expect(store.findSession(session.token)).toEqual({
      userName: 'root',
      csrfToken: session.csrfToken,
      createdAt: T0,
      expiresAt: T0 + DEFAULT_SESSION_TTL_MS,
    });
    const other = store.createSession('root').token;
    expect(store.findSession(other)?.csrfToken).not.toBe(session.csrfToken);
    for (const wrong of [
      '',
      'x',
      `${session.token}x`,
      session.token.slice(1),
      sha256(session.token).toString('hex'),
    ]) {
      expect(store.findSession(wrong), wrong).toBeUndefined();
    }
  });

  it('expires after 8 hours (or the ttl given); no idle timeout', () => {
    const { token } = store.createSession('root');
    clock.advance(DEFAULT_SESSION_TTL_MS - 1);
    expect(store.findSession(token)).toBeDefined();
    clock.advance(1);
    expect(store.findSession(token)).toBeUndefined();

    const short = new AdminStore(db, clock, { sessionTtlMs: 60_000 });
    const s = short.createSession('root');
    expect(s.expiresAt).toBe(clock.now() + 60_000);
  });

  it('drops expired rows when a new session starts', () => {
    store.createSession('root');
    clock.advance(DEFAULT_SESSION_TTL_MS);
    store.createSession('root');
    expect(db.prepare('SELECT COUNT(*) AS n FROM admin_sessions').get()).toEqual({ n: 1 });
  });

  it('endSession signs one session out', () => {
    const a = store.createSession('root');
    const b = store.createSession('root');
    expect(store.endSession(a.token)).toBe(true);
    expect(store.endSession(a.token)).toBe(false);
    expect(store.endSession('garbage')).toBe(false);
    expect(store.findSession(a.token)).toBeUndefined();
    expect(store.findSession(b.token)).toBeDefined();
  });

  it('a password change ends every session of that admin, and only theirs', async () => {
    await store.setPassword('other', 'pw');
    const a = store.createSession('root');
    const b = store.createSession('root');
    const c = store.createSession('other');
    await store.setPassword('root', 'new password');
    expect(store.findSession(a.token)).toBeUndefined();
    expect(store.findSession(b.token)).toBeUndefined();
    expect(store.findSession(c.token)).toBeDefined();
    expect(store.endSessionsOf('other')).toBe(1);
    expect(store.findSession(c.token)).toBeUndefined();
  });

  it('signIn makes a session for the right password only', async () => {
    expect(await store.signIn('root', 'wrong')).toBeUndefined();
    expect(await store.signIn('nobody', 'pw')).toBeUndefined();
    const session = await store.signIn('root', 'pw');
    expect(session && store.findSession(session.token)?.userName).toBe('root');
  });

  it('signIn makes no session when the password changes while it checks the old one', async () => {
    const signingIn = store.signIn('root', 'pw'); // scrypt runs off the event loop
    await store.setPassword('root', 'new password');
    // Whichever scrypt finished first, no session of the old password is alive afterwards.
    const session = await signingIn;
    expect(session === undefined || store.findSession(session.token) === undefined).toBe(true);
    expect(await store.signIn('root', 'new password')).toBeDefined();
  });

  it('cannot start a session for an admin that does not exist', () => {
    expect(() => store.createSession('nobody')).toThrow(/FOREIGN KEY/);
  });

  it('two handles on one file see each other’s sessions (the CLI and the web app)', async () => {
    const { token } = store.createSession('root');
    const other = new AdminStore(tmp.connect(), clock);
    expect(other.findSession(token)?.userName).toBe('root');
    await other.setPassword('root', 'changed');
    expect(store.findSession(token)).toBeUndefined();
  });
});

describe('has', () => {
  it('tells an existing admin name from any other, exactly', async () => {
    await store.setPassword('root', 'pw');
    expect(store.has('root')).toBe(true);
    expect(store.has('Root')).toBe(false);
    expect(store.has('nobody')).toBe(false);
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
