import { afterEach, describe, expect, it } from 'vitest';
import { connectPostgres, type Sql } from '../../../../../lib/store/postgres/connect.ts';
import { transaction, WRITE_DEADLINE_MS } from '../../../../../lib/store/postgres/write.ts';
import { usePostgres } from '../../../../harness/postgres.ts';
import { rejection } from '../../../../support/thrown.ts';

describe('transaction (the admin screens and CLI writes on PostgreSQL)', { timeout: 30_000 }, () => {
  const pg = usePostgres();
  const clients: Sql[] = [];
  afterEach(async () => {
    pg.server.freeze(false);
    await Promise.all(clients.splice(0).map((sql) => sql.end({ timeout: 0 })));
  });

  it('a server gone silent is STORE_UNAVAILABLE at the deadline, not a request waiting for ever', async () => {
    const sql = connectPostgres({ url: pg.url, passwordFile: pg.passwordFile }, { applicationName: 't' });
    clients.push(sql);
    await sql`SELECT 1`;
    pg.server.freeze(true);
    const started = Date.now();
    expect(await rejection(transaction(sql, async (tx) => tx`SELECT 1`))).toMatchObject({
      code: 'STORE_UNAVAILABLE',
      message: `PostgreSQL store: no answer within ${WRITE_DEADLINE_MS} ms`,
    });
    expect(Date.now() - started).toBeLessThan(WRITE_DEADLINE_MS + 2000);
  });

  it("a decision's own refusal passes through as it is", async () => {
    const sql = connectPostgres({ url: pg.url, passwordFile: pg.passwordFile }, { applicationName: 't' });
    clients.push(sql);
    const refusal = new Error('name taken');
    expect(
      await rejection(
        transaction(sql, async () => {
          throw refusal;
        }),
      ),
    ).toBe(refusal);
  });
});
