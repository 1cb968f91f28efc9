import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createPgSessionService } from '../../../../helpers/authd/pg-session-service.ts';
import { systemClock } from '../../../../lib/clock.ts';
import { runHelper } from '../../../../lib/helper-protocol/run.ts';
import { connectPostgres, type Sql } from '../../../../lib/store/postgres/connect.ts';
import { migratePostgres } from '../../../../lib/store/postgres/migrate.ts';
import { Replica } from '../../../../lib/store/postgres/replica.ts';
import { PgSessions } from '../../../../lib/store/postgres/sessions.ts';
import { postgresBox } from '../../../../lib/store/postgres/store.ts';
import { usePostgres } from '../../../harness/postgres.ts';

/**
 * authd's session lookup on a real PostgreSQL, fed by another "box" (a PgSessions of its own): Squid's lines in,
 * answers out, through runHelper as authd runs it.
 */
describe('the PostgreSQL session service', { timeout: 30_000 }, () => {
  const pg = usePostgres();
  const closing: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });
  const settings = () => ({ url: pg.url, passwordFile: pg.passwordFile });

  const otherBox = async () => {
    const sql: Sql = connectPostgres(settings(), { applicationName: 'box-a' });
    await migratePostgres(sql);
    const replica = new Replica(sql, { log: () => undefined });
    const sessions = new PgSessions(sql, replica, { clock: systemClock });
    await replica.start();
    closing.push(async () => {
      await replica.close();
      await sql.end({ timeout: 1 });
    });
    return { sql, sessions };
  };
  const service = (logged: string[] = []) => {
    const box = postgresBox(settings(), { applicationName: 'authd', log: (l) => logged.push(l), max: 2 });
    const s = createPgSessionService({ box, flushEveryMs: 50, log: (l) => logged.push(l) });
    closing.push(() => Promise.resolve(s.close()));
    return s;
  };
  const ask = async (s: ReturnType<typeof service>, line: string) => {
    const input = new PassThrough();
    const output = new PassThrough();
    let answer = '';
    output.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    const done = runHelper({ input, output, channelIds: true, log: () => undefined, ...s.handlers });
    input.end(`${line}\n`);
    await done;
    return answer.trim();
  };
  const eventually = async (check: () => Promise<boolean>) => {
    const until = Date.now() + 2000;
    while (!(await check())) {
      if (Date.now() > until) throw new Error('not within 2 s');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  it('answers a login made on another box, and ERR once it is ended there', async () => {
    const a = await otherBox();
    const s = service();
    await s.loaded;
    expect(await ask(s, '0 10.0.0.5 -')).toBe('0 ERR');
    await a.sessions.start({ key: { kind: 'ip', value: '10.0.0.5' }, username: 'alice', source: 'api' });
    await eventually(async () => (await ask(s, '0 10.0.0.5 -')) === '0 OK user=alice');
    await a.sessions.end({ kind: 'ip', value: '10.0.0.5' });
    await eventually(async () => (await ask(s, '0 10.0.0.5 -')) === '0 ERR');
  });

  it('writes "last seen" for what it answered, so other boxes judge idleness by it', async () => {
    const a = await otherBox();
    const started = await a.sessions.start({
      key: { kind: 'ip', value: '10.0.0.6' },
      username: 'alice',
      source: 'api',
      idleTimeoutMs: 60_000,
    });
    const s = service();
    await s.loaded;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await ask(s, '0 10.0.0.6 -')).toBe('0 OK user=alice');
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(await ask(s, '0 10.0.0.6 -')).toBe('0 OK user=alice');
    await eventually(
      async () => (a.sessions.find({ kind: 'ip', value: '10.0.0.6' })?.lastSeen ?? 0) > started.lastSeen,
    );
  });

  it('keeps answering from memory while PostgreSQL is stopped, and catches up when it is back', async () => {
    const a = await otherBox();
    await a.sessions.start({ key: { kind: 'ip', value: '10.0.0.7' }, username: 'alice', source: 'api' });
    const logged: string[] = [];
    const s = service(logged);
    await s.loaded;
    await pg.server.stop();
    for (let i = 0; i < 5; i++) {
      expect(await ask(s, '0 10.0.0.7 -')).toBe('0 OK user=alice');
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    await pg.server.start();
    // Box A writes again once its client has reconnected; the service has it without a restart.
    const until = Date.now() + 15_000;
    for (;;) {
      const written = await a.sessions
        .start({ key: { kind: 'ip', value: '10.0.0.8' }, username: 'bob', source: 'api' })
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      if (written === undefined) break;
      if (Date.now() > until) throw written as Error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await eventually(async () => (await ask(s, '0 10.0.0.8 -')) === '0 OK user=bob');
    expect(logged.some((l) => l.includes('PostgreSQL unreachable'))).toBe(true);
  });

  it('answers BH until its first load (PostgreSQL down at start), then answers', async () => {
    const a = await otherBox();
    await a.sessions.start({ key: { kind: 'ip', value: '10.0.0.9' }, username: 'alice', source: 'api' });
    await pg.server.stop();
    const logged: string[] = [];
    const s = service(logged);
    expect(await ask(s, '0 10.0.0.9 -')).toMatch(/^0 BH message=sessions%20not%20loaded/);
    await pg.server.start();
    await s.loaded;
    expect(await ask(s, '0 10.0.0.9 -')).toBe('0 OK user=alice');
    expect(logged.some((l) => l.startsWith('sessions not loaded yet'))).toBe(true);
  });
});
