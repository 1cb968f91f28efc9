import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HelperProcess } from '../harness/helper-process.ts';
import { browser, form, http, type Response } from '../harness/http.ts';
import { ROOT, requireSystem } from '../harness/lab.ts';
import { freePort, start, waitForPort, type Started } from '../harness/processes.ts';
import { run } from '../harness/run.ts';

/**
 * Another process holds the session DB's write lock for 10 s (the sqlite3 shell in BEGIN EXCLUSIVE, as an
 * administrator poking at the DB would): a running `doorman serve` and the compiled session helper on that
 * DB must go on answering whatever needs no write, turn writes they cannot make into a 503 or make them once
 * the lock is free, and write their bookkeeping ("last used", "last seen") later. Everything is asserted by
 * order ("answered while the lock was still held"), never by how long it took.
 */
const DOORMAN = join(ROOT, 'bin', 'doorman');
const HOLD_MS = 10_000;
const ADMIN_PASSWORD = 'Lock test admin pass';

let dir: string;
let dbPath: string;
let baseUrl: string;
let serve: Started;
let helper: HelperProcess;
let setupKey: string;
let lockKey: string;
const cleanups: Array<() => Promise<unknown>> = [];

const doorman = (args: string[], input?: string) =>
  run(DOORMAN, [...args, '--config', join(dir, 'doorman.json')], input === undefined ? {} : { input });

beforeAll(async () => {
  requireSystem();
  dir = mkdtempSync(join(tmpdir(), 'doorman-db-lock-'));
  chmodSync(dir, 0o755);
  const port = await freePort();
  baseUrl = `http://127.0.0.1:${port}/`;
  writeFileSync(
    join(dir, 'doorman.json'),
    JSON.stringify({
      baseUrl,
      listen: [{ host: '127.0.0.1', port }],
      trustedProxies: ['127.0.0.1'],
      stateDir: join(dir, 'state'),
    }),
  );
  dbPath = join(dir, 'state', 'doorman.db');
  serve = start(DOORMAN, ['serve', '--config', join(dir, 'doorman.json')]);
  cleanups.push(() => serve.stop());
  await waitForPort('127.0.0.1', port, 10_000, serve.child);
  setupKey = (await doorman(['api-key', 'create', '--name', 'setup'])).stdout.trim();
  lockKey = (await doorman(['api-key', 'create', '--name', 'during-lock'])).stdout.trim();
  await doorman(['admin', 'passwd', '--user', 'admin'], `${ADMIN_PASSWORD}\n`);
  // The helper as Squid starts it (doorman squid-conf writes --db and --flush-seconds).
  helper = new HelperProcess('session-acl.js', ['--db', dbPath, '--flush-seconds', '1']);
  cleanups.push(() => helper.end());
}, 60_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** Just enough of a browser for the admin screens: one cookie jar. */
const browse = browser(() => baseUrl);

const api = (path: string, fields: Record<string, string>, from: string) => {
  const f = form(fields);
  return http(`${baseUrl}${path}`, { method: 'POST', from, body: f.body, headers: f.headers });
};

/** The sqlite3 shell holding the write lock until release(). */
class LockHolder {
  readonly #shell: ChildProcessWithoutNullStreams;
  #out = '';
  #err = '';
  released = false;

  constructor(path: string) {
    this.#shell = spawn('sqlite3', [path]);
    this.#shell.stdout.setEncoding('utf8').on('data', (text: string) => (this.#out += text));
    this.#shell.stderr.setEncoding('utf8').on('data', (text: string) => (this.#err += text));
  }

  async take(): Promise<void> {
    this.#shell.stdin.write("BEGIN EXCLUSIVE;\nSELECT 'locked';\n");
    while (!this.#out.includes('locked')) {
      if (this.#err !== '' || this.#shell.exitCode !== null) throw new Error(`sqlite3: ${this.#err}`);
      await sleep(10);
    }
  }

  async release(): Promise<void> {
    if (this.#shell.exitCode !== null || this.#shell.signalCode !== null) return;
    this.released = true;
    const exited = new Promise((resolve) => this.#shell.once('exit', resolve));
    this.#shell.stdin.end('ROLLBACK;\n.quit\n');
    await exited;
  }
}

/** A request's answer and whether it came while the lock was still held. */
interface Outcome {
  res: Response;
  beforeRelease: boolean;
}
const track = (holder: LockHolder, pending: Promise<Response>) => {
  let settled = false;
  const outcome = pending.then((res): Outcome => {
    settled = true;
    return { res, beforeRelease: !holder.released };
  });
  // Awaited by the test; a test that failed before then must not add an unhandled rejection to its report.
  outcome.catch(() => {});
  return { outcome, settled: () => settled };
};

/** A write that met the lock: a JSON 503 with Retry-After while it is held, or done once it is free. */
function expectBusyOrDone({ res, beforeRelease }: Outcome, done: (body: unknown) => void): void {
  if (beforeRelease) {
    expect(res.status).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(JSON.parse(res.body)).toEqual({
      ok: false,
      error: 'service_unavailable',
      message: 'the session database is locked by another process; try again in 5 seconds',
    });
  } else {
    expect(res.status).toBe(200);
    done(JSON.parse(res.body));
  }
}

/** Straight from the DB file, as a reader (WAL: reading needs no lock). */
function readDb<T>(query: (db: Database.Database) => T): T {
  const db = new Database(dbPath, { readonly: true });
  try {
    return query(db);
  } finally {
    db.close();
  }
}
const lastUsed = (name: string) =>
  readDb((db) => db.prepare('SELECT last_used_at FROM api_keys WHERE name = ?').pluck().get(name)) as
    number | null;
const lastSeen = (ip: string) =>
  readDb((db) => db.prepare('SELECT last_seen FROM sessions WHERE key = ?').pluck().get(ip)) as number;

async function eventually(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (check()) return;
    await sleep(50);
  }
  throw new Error(`never happened: ${what}`);
}

describe('another process holds the session DB write lock for 10 s', () => {
  it('reads, helper answers and admin pages go on; writes wait or get 503; bookkeeping is written later', async () => {
    // Before: alice is logged in on 127.0.0.2 (with the other key), the helper knows her, an admin is signed in.
    expect((await api('api/login/', { api_key: setupKey, username: 'alice' }, '127.0.0.2')).status).toBe(200);
    expect(await helper.ask('127.0.0.2 -')).toBe('OK user=alice');
    const signInPage = await browse('admin/sign-in');
    const csrf = /name="csrf" value="([^"]*)"/.exec(signInPage.body)?.[1] ?? '';
    expect((await browse('admin/sign-in', { csrf, user: 'admin', password: ADMIN_PASSWORD })).status).toBe(
      303,
    );
    expect(lastUsed('during-lock')).toBeNull();
    const seenBefore = lastSeen('127.0.0.2');

    const holder = new LockHolder(dbPath);
    cleanups.push(() => holder.release());
    await holder.take();
    const heldSince = Date.now();

    // A login and a logout that need the lock.
    const login = track(holder, api('api/login/', { api_key: lockKey, username: 'bob' }, '127.0.0.3'));
    const logout = track(holder, api('api/logout/', { api_key: lockKey }, '127.0.0.5'));

    // Pages that need no write answer while those wait: nothing blocks the event loop.
    for (const path of ['admin/style.css', 'admin/directory']) {
      const page = await browse(path);
      expect(page.status, path).toBe(200);
      expect(login.settled(), `${path} answered while the login waits`).toBe(false);
    }
    expect(holder.released).toBe(false);

    // The helper answers from memory and from reads, and its "last seen" flush meets the lock and waits.
    const answers: string[] = [];
    const expected = (a: string, i: number) => a === (i % 2 === 0 ? 'OK user=alice' : 'ERR');
    const flushWaits = () => helper.stderr.includes('last seen: the session DB is locked by another process');
    for (let i = 0; i < 50 && !flushWaits() && answers.every(expected); i++) {
      answers.push(await helper.ask('127.0.0.2 -'), await helper.ask('127.0.0.9 -'));
      await sleep(100);
    }
    answers.push(await helper.ask('127.0.0.2 -'), await helper.ask('127.0.0.9 -'));
    expect(holder.released).toBe(false);
    expect(answers.filter((a, i) => !expected(a, i))).toEqual([]);
    expect(flushWaits()).toBe(true);

    // The first writes get their answer: a 503 while the lock is held (or done, had it been freed).
    expectBusyOrDone(await login.outcome, (body) =>
      expect(body).toEqual({ ok: true, username: 'bob', ip: '127.0.0.3' }),
    );
    expectBusyOrDone(await logout.outcome, (body) =>
      expect(body).toEqual({ ok: true, ip: '127.0.0.5', ended: false }),
    );
    // The key was checked while the lock was held, but "last used" could not be written yet.
    expect(holder.released).toBe(false);
    expect(lastUsed('during-lock')).toBeNull();
    expect(lastSeen('127.0.0.2')).toBe(seenBefore);

    // A login shortly before the lock is freed completes once it is.
    await sleep(Math.max(0, heldSince + HOLD_MS - 500 - Date.now()));
    const late = track(holder, api('api/login/', { api_key: lockKey, username: 'carol' }, '127.0.0.4'));
    await sleep(300);
    expect(late.settled()).toBe(false);
    await holder.release();
    const lateOutcome = await late.outcome;
    expect(lateOutcome.beforeRelease).toBe(false);
    expect(lateOutcome.res.status).toBe(200);
    expect(JSON.parse(lateOutcome.res.body)).toEqual({ ok: true, username: 'carol', ip: '127.0.0.4' });
    expect(await helper.ask('127.0.0.4 -')).toBe('OK user=carol');

    // Bookkeeping is written after the release, with no further use of the key or traffic to the helper.
    await eventually(
      '"last used" of the key used during the lock is written',
      () => lastUsed('during-lock') !== null,
    );
    await eventually('the helper writes "last seen" of alice', () => lastSeen('127.0.0.2') > seenBefore);

    expect(helper.stderr).not.toMatch(/answered BH|internal error/);
    expect(serve.stderr()).not.toMatch(/internal error|" 500 ip=/);
    expect(helper.alive).toBe(true);
  });
});
