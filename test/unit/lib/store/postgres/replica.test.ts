import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../../../../lib/clock.ts';
import { connectPostgres, type Sql } from '../../../../../lib/store/postgres/connect.ts';
import { migratePostgres } from '../../../../../lib/store/postgres/migrate.ts';
import { Replica } from '../../../../../lib/store/postgres/replica.ts';
import { PgSessions } from '../../../../../lib/store/postgres/sessions.ts';
import { usePostgres } from '../../../../harness/postgres.ts';

describe('Replica (a real PostgreSQL 15)', { timeout: 30_000 }, () => {
  const pg = usePostgres();
  const clients: Sql[] = [];
  afterEach(async () => {
    pg.server.freeze(false);
    await Promise.all(clients.splice(0).map((sql) => sql.end({ timeout: 0 })));
  });

  it('gives up a catch-up that gets no answer (a server frozen, connections open), and catches up once it answers', async () => {
    const logged: string[] = [];
    const sql = connectPostgres({ url: pg.url, passwordFile: pg.passwordFile }, { applicationName: 't' });
    clients.push(sql);
    await migratePostgres(sql);
    const replica = new Replica(sql, {
      log: (l) => logged.push(l),
      pollMs: 60_000,
      staleLogMs: 0,
      readTimeoutMs: 300,
    });
    const sessions = new PgSessions(sql, replica, { clock: systemClock });
    await replica.start();
    const other = connectPostgres({ url: pg.url, passwordFile: pg.passwordFile }, { applicationName: 't2' });
    clients.push(other);
    const writer = new PgSessions(other, new Replica(other, { log: () => undefined }), {
      clock: systemClock,
    });

    pg.server.freeze(true);
    const started = Date.now();
    await replica.catchUp();
    expect(Date.now() - started).toBeLessThan(2000);
    expect(logged.some((l) => l.includes('no answer within 300 ms'))).toBe(true);

    pg.server.freeze(false);
    await writer.start({ key: { kind: 'ip', value: '10.0.0.5' }, username: 'alice', source: 'api' });
    await replica.catchUp();
    await replica.catchUp();
    expect(sessions.find({ kind: 'ip', value: '10.0.0.5' })?.username).toBe('alice');
    await replica.close();
  });
});
