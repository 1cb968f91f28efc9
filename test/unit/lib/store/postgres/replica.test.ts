import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../../../../../lib/clock.ts';
import { takeChange } from '../../../../../lib/store/postgres/changes.ts';
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

  const connected = async (name: string, logged: string[] = []) => {
    const sql = connectPostgres({ url: pg.url, passwordFile: pg.passwordFile }, { applicationName: name });
    clients.push(sql);
    await migratePostgres(sql);
    const replica = new Replica(sql, { log: (l) => logged.push(l), pollMs: 60_000, staleLogMs: 0 });
    return { sql, replica };
  };

  it('another server answering (a failover, a restore, a restart) is read again whole, dropping what it lacks', async () => {
    const b = await connected('box-b');
    const sessions = new PgSessions(b.sql, b.replica, { clock: systemClock });
    await b.replica.start();
    await sessions.start({ key: { kind: 'ip', value: '10.0.0.5' }, username: 'alice', source: 'api' });
    expect(sessions.find({ kind: 'ip', value: '10.0.0.5' })).toBeDefined();
    // The new primary never had it (lost with the old one), and the change numbers say nothing of it.
    pg.server.psql('DELETE FROM sessions', pg.database);
    await pg.server.stop();
    await pg.server.start();
    await vi.waitFor(() => expect(sessions.find({ kind: 'ip', value: '10.0.0.5' })).toBeUndefined(), {
      timeout: 5000,
      interval: 20,
    });
    await b.replica.close();
  });

  it('a table that cannot be applied stops only itself, named in the log; the others go on', async () => {
    const logged: string[] = [];
    const b = await connected('box-b', logged);
    let broken = false;
    b.replica.table('settings', {
      load: async (tx) => {
        await tx`SELECT 1`;
        return () => {
          if (broken) throw new TypeError('text.indexOf is not a function');
        };
      },
    });
    const sessions = new PgSessions(b.sql, b.replica, { clock: systemClock });
    await b.replica.start();
    broken = true;
    await b.sql.begin((tx) => takeChange(tx, 'settings'));
    await sessions.start({ key: { kind: 'ip', value: '10.0.0.6' }, username: 'bob', source: 'api' });
    const settingsBefore = b.replica.applied('settings');
    await b.replica.catchUp();
    await b.replica.catchUp();
    expect(b.replica.applied('sessions')).toBeGreaterThan(0);
    expect(b.replica.applied('settings')).toBe(settingsBefore);
    expect(
      logged.some((l) =>
        /^store: settings at change \d+ cannot be applied, kept as it was: text\.indexOf/.test(l),
      ),
    ).toBe(true);
    await b.replica.close();
  });
});
