import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../../../../lib/clock.ts';
import { connectPostgres, type Sql } from '../../../../../lib/store/postgres/connect.ts';
import { migratePostgres } from '../../../../../lib/store/postgres/migrate.ts';
import { Replica } from '../../../../../lib/store/postgres/replica.ts';
import { DELETIONS_KEPT_MS, PgSessions } from '../../../../../lib/store/postgres/sessions.ts';
import type { SessionKey } from '../../../../../lib/store/session-store.ts';
import { usePostgres } from '../../../../harness/postgres.ts';
import { rejection } from '../../../../support/thrown.ts';

/** Two boxes on one real PostgreSQL: each its own client, replica and sessions, as two Doormans would have. */
describe('PgSessions (a real PostgreSQL 15, two boxes)', { timeout: 30_000 }, () => {
  const pg = usePostgres();
  const open: Array<{ sql: Sql; replica: Replica }> = [];
  const logged: string[] = [];
  afterEach(async () => {
    for (const box of open.splice(0)) {
      await box.replica.close();
      await box.sql.end({ timeout: 1 });
    }
    logged.length = 0;
  });

  const box = async (options: { pollMs?: number; deadlineMs?: number } = {}) => {
    const sql = connectPostgres(
      { url: pg.url, passwordFile: pg.passwordFile },
      { applicationName: 'test', connectTimeoutSeconds: 1 },
    );
    await migratePostgres(sql);
    const replica = new Replica(sql, {
      log: (line) => logged.push(line),
      pollMs: options.pollMs ?? 60_000,
      staleLogMs: 0,
    });
    const sessions = new PgSessions(sql, replica, {
      clock: systemClock,
      deadlineMs: options.deadlineMs ?? 3000,
    });
    await replica.start();
    open.push({ sql, replica });
    return { sql, replica, sessions };
  };
  const ip = (value: string): SessionKey => ({ kind: 'ip', value });
  /** Until `check` holds (a replica catching up on a notification), at most 2 s. */
  const eventually = async (check: () => boolean) => {
    const until = Date.now() + 2000;
    while (!check()) {
      if (Date.now() > until) throw new Error('not within 2 s');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  };

  it("a login on A is A's at once and B's on the notification; a logout on B ends it on A", async () => {
    const [a, b] = [await box(), await box()];
    const started = await a.sessions.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    expect(a.sessions.find(ip('10.0.0.5'))).toEqual(started);
    await eventually(() => b.sessions.find(ip('10.0.0.5'))?.username === 'alice');
    expect(b.sessions.find(ip('10.0.0.5'))).toEqual(started);
    expect(await b.sessions.end(ip('10.0.0.5'))).toEqual(started);
    expect(b.sessions.find(ip('10.0.0.5'))).toBeUndefined();
    await eventually(() => a.sessions.find(ip('10.0.0.5')) === undefined);
  });

  it('logins of one turn share one transaction and one change number; each gets its own row', async () => {
    const a = await box();
    const before = a.replica.applied('sessions');
    const users = Array.from({ length: 50 }, (_, i) => `user${i}`);
    const started = await Promise.all(
      users.map((username, i) => a.sessions.start({ key: ip(`10.1.0.${i}`), username, source: 'api' })),
    );
    expect(started.map((s) => s.username)).toEqual(users);
    await a.replica.catchUp();
    expect(a.replica.applied('sessions')).toBe(before + 1);
    expect(a.sessions.list()).toHaveLength(50);
  });

  it('a new login on a key replaces the session with a new id, on both boxes', async () => {
    const [a, b] = [await box(), await box()];
    const first = await a.sessions.start({ key: ip('10.0.0.6'), username: 'alice', source: 'api' });
    await eventually(() => b.sessions.find(ip('10.0.0.6')) !== undefined);
    const second = await b.sessions.start({ key: ip('10.0.0.6'), username: 'bob', source: 'portal' });
    expect(second.id).not.toBe(first.id);
    await eventually(() => a.sessions.find(ip('10.0.0.6'))?.username === 'bob');
    expect(a.sessions.list()).toHaveLength(1);
  });

  it('hard expiry is honoured from memory; purge deletes and every box sees it go', async () => {
    const [a, b] = [await box(), await box()];
    await a.sessions.start({
      key: ip('10.0.0.7'),
      username: 'alice',
      source: 'api',
      expiresAt: Date.now() + 150,
    });
    await a.sessions.start({ key: ip('10.0.0.8'), username: 'bob', source: 'api' });
    await eventually(() => b.sessions.list().length === 2);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(b.sessions.find(ip('10.0.0.7'))).toBeUndefined();
    expect(await a.sessions.purgeExpired()).toBe(1);
    await eventually(() => b.sessions.size === 1);
  });

  it('Clear current sessions (by source) and clear reach the other box', async () => {
    const [a, b] = [await box(), await box()];
    await a.sessions.start({ key: ip('10.0.0.9'), username: 'alice', source: 'api' });
    await a.sessions.start({ key: ip('10.0.0.10'), username: 'bob', source: 'portal' });
    await a.sessions.start({
      key: { kind: 'mac', value: '02:00:00:00:00:01' },
      username: 'c',
      source: 'registration',
    });
    await eventually(() => b.sessions.list().length === 3);
    expect(await b.sessions.endBySource(['portal', 'registration', 'agreement'])).toBe(2);
    await eventually(() => a.sessions.list().length === 1);
    expect(a.sessions.list()[0]?.username).toBe('alice');
    expect(await a.sessions.clear()).toBe(1);
    await eventually(() => b.sessions.list().length === 0);
  });

  it('"last seen" keeps the latest sighting of any box, and every box learns it', async () => {
    const [a, b] = [await box(), await box()];
    const s = await a.sessions.start({
      key: ip('10.0.0.11'),
      username: 'alice',
      source: 'api',
      idleTimeoutMs: 60_000,
    });
    await a.sessions.touch(new Map([[s.id, s.lastSeen + 5000]]));
    await b.sessions.touch(new Map([[s.id, s.lastSeen + 1000]]));
    await eventually(() => b.sessions.find(ip('10.0.0.11'))?.lastSeen === s.lastSeen + 5000);
    expect(a.sessions.find(ip('10.0.0.11'))?.lastSeen).toBe(s.lastSeen + 5000);
  });

  it('a box whose deletions were pruned past it loads everything again (a delta would keep the ended session)', async () => {
    const [a, b] = [await box(), await box()];
    const s = await a.sessions.start({ key: ip('10.0.0.12'), username: 'alice', source: 'api' });
    await eventually(() => b.sessions.size === 1);
    // Ended while B heard nothing of it (no NOTIFY, B polls once a minute), then the deletion pruned.
    await a.sql.begin(async (tx) => {
      const [row] = await tx<
        { last: number }[]
      >`UPDATE changes SET last = last + 1 WHERE tab = 'sessions' RETURNING last`;
      await tx`DELETE FROM sessions WHERE id = ${s.id}`;
      await tx`INSERT INTO session_deletions (id, change, at) VALUES (${s.id}, ${row?.last ?? 0}, ${Date.now() - DELETIONS_KEPT_MS - 1000})`;
    });
    await a.sessions.purgeExpired();
    expect((await a.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM session_deletions`)[0]?.n).toBe(0);
    expect(b.sessions.size).toBe(1);
    await b.replica.catchUp();
    expect(b.sessions.size).toBe(0);
  });

  it('an agreement is decided in the transaction: no active group, no session', async () => {
    const a = await box();
    const settings = { idleTimeoutMinutes: null, hardTimeoutMinutes: 60 };
    expect(await a.sessions.startAgreement('10.9.0.1', settings)).toBeUndefined();
    await a.sql`INSERT INTO device_groups (name, cidrs, active, created_at, updated_at, change)
      VALUES ('Guests', '["10.9.0.0/16"]', true, 0, 0, 1), ('Off', '["10.9.0.0/24"]', false, 0, 0, 1)`;
    const made = await a.sessions.startAgreement('10.9.0.1', settings);
    expect(made?.group.name).toBe('Guests');
    expect(made?.session.username).toBe('agreement:Guests');
    expect(a.sessions.find(ip('10.9.0.1'))?.source).toBe('agreement');
  });

  it('PostgreSQL away: lookups answer from memory, writes fail STORE_UNAVAILABLE; back: caught up, no restart', async () => {
    const [a, b] = [
      await box({ pollMs: 100, deadlineMs: 1500 }),
      await box({ pollMs: 100, deadlineMs: 1500 }),
    ];
    await a.sessions.start({ key: ip('10.0.0.13'), username: 'alice', source: 'api' });
    await eventually(() => b.sessions.find(ip('10.0.0.13')) !== undefined);
    await pg.server.stop();
    expect(b.sessions.find(ip('10.0.0.13'))?.username).toBe('alice');
    expect(
      await rejection(b.sessions.start({ key: ip('10.0.0.14'), username: 'bob', source: 'api' })),
    ).toMatchObject({
      code: 'STORE_UNAVAILABLE',
    });
    expect(b.sessions.find(ip('10.0.0.14'))).toBeUndefined();
    await eventually(() =>
      logged.some((l) => l.includes('PostgreSQL unreachable') && l.includes('answering from memory')),
    );
    await pg.server.start();
    // A writes once it can reach it again (its client reconnects by itself); B has it within 2 s.
    const until = Date.now() + 10_000;
    for (;;) {
      const written = await rejection(
        a.sessions.start({ key: ip('10.0.0.15'), username: 'carol', source: 'api' }),
      );
      if (written === undefined) break;
      if (Date.now() > until) throw written as Error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const back = Date.now();
    await eventually(() => b.sessions.find(ip('10.0.0.15')) !== undefined);
    expect(Date.now() - back).toBeLessThan(2000);
  });
});
