import { afterEach, describe, expect, it } from 'vitest';
import { connectPostgres, type Sql } from '../../../../../lib/store/postgres/connect.ts';
import { WriteBatch } from '../../../../../lib/store/postgres/write-batch.ts';
import { usePostgres } from '../../../../harness/postgres.ts';
import { rejection } from '../../../../support/thrown.ts';

/** WriteBatch on a real PostgreSQL: each write reports the transaction it ran in. */
describe('WriteBatch (group commit on PostgreSQL)', { timeout: 30_000 }, () => {
  const pg = usePostgres();
  const clients: Sql[] = [];
  afterEach(async () => {
    pg.server.freeze(false);
    await Promise.all(clients.splice(0).map((sql) => sql.end({ timeout: 0 })));
  });
  const batch = (deadlineMs = 5000) => {
    const sql = connectPostgres({ url: pg.url, passwordFile: pg.passwordFile }, { applicationName: 't' });
    clients.push(sql);
    const committed: number[] = [];
    const writes = new WriteBatch<{ xid: number }>({
      sql,
      deadlineMs,
      begin: async (tx) => {
        const [row] = await tx<{ xid: number }[]>`SELECT txid_current() AS xid`;
        return { xid: row?.xid ?? 0 };
      },
      committed: (context) => committed.push(context.xid),
    });
    const write = () => writes.run(async (_tx, context) => ({ value: context.xid }));
    return { writes, write, committed };
  };

  it('writes asked for in turns of their own while a commit runs go in the next transaction together', async () => {
    const { write, committed } = batch();
    const xids: Promise<number>[] = [];
    for (let i = 0; i < 200; i++) {
      xids.push(write());
      await new Promise((resolve) => setImmediate(resolve));
    }
    const seen = await Promise.all(xids);
    // A transaction per turn would be 200; one at a time, each taking what came meanwhile, is a handful.
    expect(new Set(seen).size).toBe(committed.length);
    expect(committed.length).toBeLessThan(100);
    // In the order asked: a later write never ran in an earlier transaction.
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
  });

  it('a transaction takes writes up to maxRows rows ("last seen" by the thousand never makes one long transaction)', async () => {
    const { writes, committed } = batch();
    const big = () => writes.run(async (_tx, context) => ({ value: context.xid }), { rows: 2000 });
    const xids = await Promise.all([big(), big(), big(), big(), big()]);
    // 10,000 rows, at most 5,000 a transaction: two writes, two, then one; never all in one.
    expect(new Set(xids).size).toBeGreaterThanOrEqual(3);
    expect(committed.length).toBe(new Set(xids).size);
  });

  it('a write answered 503 while another transaction holds its lock is rolled back, never committed later', async () => {
    const sql = connectPostgres({ url: pg.url, passwordFile: pg.passwordFile }, { applicationName: 't' });
    clients.push(sql);
    await sql`CREATE TABLE marks (n int)`;
    const writes = new WriteBatch<null>({
      sql,
      deadlineMs: 500,
      begin: async (tx) => {
        await tx`LOCK TABLE marks IN EXCLUSIVE MODE`;
        return null;
      },
      committed: () => undefined,
    });
    const holder = connectPostgres({ url: pg.url, passwordFile: pg.passwordFile }, { applicationName: 'h' });
    clients.push(holder);
    let release: () => void = () => undefined;
    const held = holder.begin(async (tx) => {
      await tx`LOCK TABLE marks IN EXCLUSIVE MODE`;
      // Let go a little after the writer's deadline, well before the server's statement_timeout.
      await new Promise<void>((resolve) => (release = resolve));
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const write = writes.run(async (tx) => {
      await tx`INSERT INTO marks VALUES (1)`;
      return { value: 1 };
    });
    expect(await rejection(write)).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    release();
    await held;
    await writes.drain();
    expect(await sql`SELECT n FROM marks`).toEqual([]);
  });

  it('a write that waited its deadline behind a transaction that does not end is refused, and the next goes through', async () => {
    const { write, writes } = batch(400);
    await write();
    pg.server.freeze(true);
    const stuck = rejection(write());
    await new Promise((resolve) => setTimeout(resolve, 50));
    const behind = rejection(write());
    expect(await stuck).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(await behind).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    pg.server.freeze(false);
    const until = Date.now() + 10_000;
    while ((await rejection(write())) !== undefined) {
      if (Date.now() > until) throw new Error('no write went through once PostgreSQL answered again');
    }
    await writes.drain();
  });
});
