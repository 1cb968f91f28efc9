import { describe, expect, it, vi } from 'vitest';
import type { Sql } from '../../../../../lib/store/postgres/connect.ts';
import type { ReadApplied } from '../../../../../lib/store/postgres/replica.ts';
import { DELETIONS_KEPT_MS } from '../../../../../lib/store/postgres/session-upkeep.ts';
import { usePgSite } from '../../../../harness/pg-site.ts';
import { rejection } from '../../../../support/thrown.ts';
import { describePortalSessions } from '../contract/sessions-portal.ts';
import { describeSessionSearch } from '../contract/sessions-search.ts';
import { ip } from '../../../../support/session-keys.ts';
import { describeSessions, T0 } from '../contract/sessions.ts';

/**
 * A seam for a box's replica (ReplicaOptions.applying) that holds the first read bringing the sessions up to
 * `change` or further, once its snapshot is taken and before anything of it is applied, until released.
 */
function holdSessionsRead(): {
  applying: (tables: readonly ReadApplied[]) => Promise<void> | undefined;
  arm(change: number): Promise<ReadApplied>;
  release(): void;
} {
  let armed: { change: number; reached: (read: ReadApplied) => void } | undefined;
  let release = () => {};
  return {
    applying: (tables) => {
      const read = tables.find((t) => t.tab === 'sessions' && armed !== undefined && t.last >= armed.change);
      if (read === undefined || armed === undefined) return undefined;
      armed.reached(read);
      armed = undefined;
      return new Promise((resolve) => (release = resolve));
    },
    arm: (change) => new Promise((reached) => (armed = { change, reached })),
    release: () => release(),
  };
}

/** The sessions' counter as the database has it now. */
async function sessionsLast(sql: Sql): Promise<number> {
  const [row] = await sql<{ last: number }[]>`SELECT last FROM changes WHERE tab = 'sessions'`;
  return row?.last ?? -1;
}

/** Until `check` holds (a replica catching up on a notification alone: the boxes poll once a minute). */
const eventually = (check: () => void) => vi.waitFor(check, { timeout: 2000, interval: 5 });

/** Boxes on one real PostgreSQL: each its own client, replica and sessions, as two Doormans would have. */
describe('PgSessions (a real PostgreSQL 15)', { timeout: 30_000 }, () => {
  const { pg, open } = usePgSite();
  describeSessions(open);
  describePortalSessions(open);
  describeSessionSearch(open);

  it("a login on A is A's at once and B's on the notification; a logout on B ends it on A", async () => {
    const site = await open({ now: T0 });
    const [a, b] = [await site.box(), await site.box()];
    const started = await a.store.sessions.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    expect(a.store.sessions.find(ip('10.0.0.5'))).toEqual(started);
    await eventually(() => expect(b.store.sessions.find(ip('10.0.0.5'))).toEqual(started));
    expect(await b.store.sessions.end(ip('10.0.0.5'))).toEqual(started);
    expect(b.store.sessions.find(ip('10.0.0.5'))).toBeUndefined();
    await eventually(() => expect(a.store.sessions.find(ip('10.0.0.5'))).toBeUndefined());
  });

  it("a logout is not undone on the box that made it by a delta read before it (the session's row in it)", async () => {
    const site = await open({ now: T0 });
    const held = holdSessionsRead();
    const [a, b] = [await site.box({ applying: held.applying }), await site.box()];
    const s = await a.store.sessions.start({ key: ip('10.0.0.20'), username: 'alice', source: 'api' });
    await a.sync();
    // B sees the device: A's next delta (on its notification) holds the row again, as of before the logout.
    const reached = held.arm(a.replica.applied('sessions') + 1);
    await b.store.sessions.touch(new Map([[s.id, T0 + 1000]]));
    const seen = await sessionsLast(site.sql);
    expect(await reached).toEqual({ tab: 'sessions', last: seen, full: false });
    await a.store.sessions.end(ip('10.0.0.20'));
    expect(a.store.sessions.find(ip('10.0.0.20'))).toBeUndefined();
    // The held delta applied, and nothing after it yet.
    const applied = a.replica.catchUp();
    held.release();
    await applied;
    expect(a.replica.applied('sessions')).toBe(seen);
    expect(a.store.sessions.find(ip('10.0.0.20'))).toBeUndefined();
    await a.sync();
    expect(a.store.sessions.find(ip('10.0.0.20'))).toBeUndefined();
  });

  it('the logins and logouts made while a full load is under way hold in the table the load puts in place', async () => {
    const site = await open({ now: T0 });
    const held = holdSessionsRead();
    const a = await site.box({ applying: held.applying });
    await a.store.sessions.start({ key: ip('10.0.0.21'), username: 'alice', source: 'api' });
    const carol = await a.store.sessions.start({ key: ip('10.0.0.23'), username: 'carol', source: 'api' });
    await a.sync();
    // A change whose deletions are pruned already: A's next catch-up loads everything (replica.ts).
    const reached = held.arm(a.replica.applied('sessions') + 1);
    const [row] = await site.sql<{ last: number }[]>`
      UPDATE changes SET last = last + 1, pruned = last + 1 WHERE tab = 'sessions' RETURNING last`;
    const pruned = row?.last ?? -1;
    void a.replica.catchUp();
    expect(await reached).toEqual({ tab: 'sessions', last: pruned, full: true });
    const [bob] = await Promise.all([
      a.store.sessions.start({ key: ip('10.0.0.22'), username: 'bob', source: 'api' }),
      a.store.sessions.end(ip('10.0.0.21')),
    ]);
    expect(a.store.sessions.find(ip('10.0.0.22'))).toEqual(bob);
    expect(a.store.sessions.find(ip('10.0.0.21'))).toBeUndefined();
    // The held load applied (its table, of before bob and alice's logout, in place), and nothing after it yet.
    const applied = a.replica.catchUp();
    held.release();
    await applied;
    expect(a.replica.applied('sessions')).toBe(pruned);
    expect(a.store.sessions.list()).toEqual([bob, carol]);
    await a.sync();
    expect(a.store.sessions.list()).toEqual([bob, carol]);
  });

  it('the logins of one turn share one transaction: one change number, one notification', async () => {
    const site = await open({ now: T0 });
    const a = await site.box();
    const before = a.replica.applied('sessions');
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        a.store.sessions.start({ key: ip(`10.1.0.${i}`), username: `user${i}`, source: 'api' }),
      ),
    );
    await a.sync();
    expect(a.replica.applied('sessions')).toBe(before + 1);
    expect(await site.sql`SELECT DISTINCT change FROM sessions`).toEqual([{ change: before + 1 }]);
  });

  it('a login again then a logout between two catch-ups of B: B drops the first session too (the replaced row is recorded)', async () => {
    const site = await open({ now: T0 });
    const [a, b] = [await site.box(), await site.box()];
    await a.store.sessions.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    await eventually(() => expect(b.store.sessions.find(ip('10.0.0.5'))?.username).toBe('alice'));
    // One transaction: bob replaces alice, then the key is logged out.
    await Promise.all([
      a.store.sessions.start({ key: ip('10.0.0.5'), username: 'bob', source: 'api' }),
      a.store.sessions.end(ip('10.0.0.5')),
    ]);
    // Caught up with the database's counter (a replica's catchUp() may answer with a read already under way).
    await b.sync();
    expect(b.store.sessions.find(ip('10.0.0.5'))).toBeUndefined();
  });

  it('logins next to each other go in one statement; a key given twice in it is replaced in order, as one at a time', async () => {
    const site = await open({ now: T0 });
    const [a, b] = [await site.box(), await site.box()];
    const [first, second, other] = await Promise.all([
      a.store.sessions.start({ key: ip('10.0.0.7'), username: 'alice', source: 'api' }),
      a.store.sessions.start({ key: ip('10.0.0.7'), username: 'bob', source: 'api', expiresAt: T0 + 60_000 }),
      a.store.sessions.start({
        key: ip('10.0.0.8'),
        username: 'carol',
        source: 'api',
        idleTimeoutMs: 60_000,
      }),
    ]);
    expect([first?.username, second?.username, other?.username]).toEqual(['alice', 'bob', 'carol']);
    expect(second?.id).not.toBe(first?.id);
    expect(second?.expiresAt).toBe(T0 + 60_000);
    expect(other?.idleTimeoutMs).toBe(60_000);
    await b.sync();
    expect(b.store.sessions.find(ip('10.0.0.7'))).toEqual(second);
    expect(b.store.sessions.find(ip('10.0.0.8'))).toEqual(other);
    expect(await site.sql`SELECT id FROM session_deletions`).toEqual([{ id: first?.id }]);
  });

  it('purges ended sessions 2,000 a transaction (each holds the sessions counter every box waits on)', async () => {
    const site = await open({ now: T0 });
    const a = await site.box();
    await site.sql`
      INSERT INTO sessions (key_kind, key, username, source, created_at, last_seen, expires_at, change)
      SELECT 'ip', '10.5.' || (i / 256) || '.' || (i % 256), 'gone', 'api', 0, 0, ${T0 - 1}, 0
      FROM generate_series(0, 4499) AS i`;
    const before = (await site.sql<{ last: number }[]>`SELECT last FROM changes WHERE tab = 'sessions'`)[0]
      ?.last;
    expect(await a.store.sessions.purgeExpired()).toBe(4500);
    const after = (await site.sql<{ last: number }[]>`SELECT last FROM changes WHERE tab = 'sessions'`)[0]
      ?.last;
    expect((after ?? 0) - (before ?? 0)).toBe(3);
    expect(await site.sql`SELECT count(*)::int AS n FROM sessions`).toEqual([{ n: 0 }]);
  });

  it('a box whose deletions were pruned past it loads everything again (a delta would keep the ended session)', async () => {
    const site = await open({ now: T0 });
    const [a, b] = [await site.box(), await site.box()];
    const s = await a.store.sessions.start({ key: ip('10.0.0.12'), username: 'alice', source: 'api' });
    await eventually(() => expect(b.store.sessions.size).toBe(1));
    // Ended while B heard nothing of it (no NOTIFY, B polls once a minute), then the deletion pruned.
    await a.sql.begin(async (tx) => {
      const [row] = await tx<
        { last: number }[]
      >`UPDATE changes SET last = last + 1 WHERE tab = 'sessions' RETURNING last`;
      await tx`DELETE FROM sessions WHERE id = ${s.id}`;
      await tx`INSERT INTO session_deletions (id, change, at) VALUES (${s.id}, ${row?.last ?? 0}, ${T0 - DELETIONS_KEPT_MS - 1000})`;
    });
    expect(b.store.sessions.size).toBe(1);
    // The purge prunes the deletion (and its NOTIFY may reach B before the catch-up below: the same reload).
    await a.store.sessions.purgeExpired();
    expect(await site.sql`SELECT 1 FROM session_deletions`).toHaveLength(0);
    await b.sync();
    expect(b.store.sessions.size).toBe(0);
  });

  it('PostgreSQL away: lookups answer from memory, writes fail STORE_UNAVAILABLE; back: caught up, no restart', async () => {
    const site = await open({ now: T0 });
    const options = { pollMs: 100, deadlineMs: 1500, staleLogMs: 0 };
    const [a, b] = [await site.box(options), await site.box(options)];
    await a.store.sessions.start({ key: ip('10.0.0.13'), username: 'alice', source: 'api' });
    await eventually(() => expect(b.store.sessions.find(ip('10.0.0.13'))).toBeDefined());
    await pg.server.stop();
    expect(b.store.sessions.find(ip('10.0.0.13'))?.username).toBe('alice');
    expect(
      await rejection(b.store.sessions.start({ key: ip('10.0.0.14'), username: 'bob', source: 'api' })),
    ).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(b.store.sessions.find(ip('10.0.0.14'))).toBeUndefined();
    await eventually(() =>
      expect(
        b.logs.some((l) => l.includes('PostgreSQL unreachable') && l.includes('answering from memory')),
      ).toBe(true),
    );
    await pg.server.start();
    // A writes once it can reach it again (its client reconnects by itself); B has it within 2 s.
    const until = Date.now() + 10_000;
    for (;;) {
      const written = await rejection(
        a.store.sessions.start({ key: ip('10.0.0.15'), username: 'carol', source: 'api' }),
      );
      if (written === undefined) break;
      if (Date.now() > until) throw written as Error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const back = Date.now();
    await eventually(() => expect(b.store.sessions.find(ip('10.0.0.15'))).toBeDefined());
    expect(Date.now() - back).toBeLessThan(2000);
  });
});
