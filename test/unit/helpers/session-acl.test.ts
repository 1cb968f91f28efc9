import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../../lib/clock.ts';
import { openDatabase } from '../../../lib/store/database.ts';
import type { Db } from '../../../lib/store/database.ts';
import { SessionStore } from '../../../lib/store/session-store.ts';
import { squidReadsReply } from '../lib/helper-protocol/squid-model.ts';
import type { SquidReadReply } from '../lib/helper-protocol/squid-model.ts';
import { ip, mac } from '../../support/session-keys.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
/** The pinned Node (24, runs .ts), not whatever `node` is on PATH. */
const NODE = join(ROOT, 'node_modules', 'node', 'bin', 'node');
// What Squid runs: the compiled helper (npm test builds it first).
const HELPER = join(ROOT, 'dist', 'helpers', 'session-acl.js');

/** A reply line as Squid accepts it, with the channel-ID this helper always runs with. */
const REPLY_LINE = /^(\d+ )?(OK|ERR|BH)( [A-Za-z0-9_-]+=[A-Za-z0-9\-._~%]*)*$/;

interface Helper {
  child: ChildProcessWithoutNullStreams;
  /** Complete stdout lines so far. */
  stdout: () => string[];
  stderr: () => string;
  /** The replies read as Squid reads them, by channel (a list, to catch duplicates). */
  byChannel: () => Map<string | undefined, SquidReadReply[]>;
  send: (text: string | Buffer) => void;
  /** Resolves when `count` reply lines have arrived; rejects after `ms`. */
  replies: (count: number, ms?: number) => Promise<string[]>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let dir: string;
let dbPath: string;
let configPath: string;
const children: ChildProcessWithoutNullStreams[] = [];
const handles: Db[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'doorman-session-acl-'));
  dbPath = join(dir, 'doorman.db');
  configPath = join(dir, 'doorman.json');
  writeFileSync(configPath, JSON.stringify({ stateDir: dir }));
});
afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill();
  for (const db of handles.splice(0)) if (db.open) db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The web app's side: a store on its own handle of the helper's DB file (created if missing). */
function portal(): SessionStore {
  const db = openDatabase(dbPath);
  handles.push(db);
  return new SessionStore(db, systemClock);
}

function startHelper(): Helper {
  const child = spawn(NODE, [HELPER, '--config', configPath], { stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  let err = '';
  let waiters: Array<() => void> = [];
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (text: string) => {
    out += text;
    for (const wake of waiters.splice(0)) wake();
  });
  child.stderr.on('data', (text: string) => (err += text));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const stdout = () => out.split('\n').slice(0, -1);
  const replies = async (count: number, ms = 5000): Promise<string[]> => {
    const deadline = Date.now() + ms;
    while (stdout().length < count) {
      if (Date.now() > deadline || child.exitCode !== null) {
        throw new Error(`wanted ${count} replies, got ${JSON.stringify(stdout())}; stderr: ${err}`);
      }
      await Promise.race([new Promise<void>((wake) => waiters.push(wake)), sleep(50)]);
    }
    waiters = [];
    return stdout();
  };
  const byChannel = () => {
    const map = new Map<string | undefined, SquidReadReply[]>();
    for (const reply of stdout().map((l) => squidReadsReply(l, true))) {
      map.set(reply.channel, [...(map.get(reply.channel) ?? []), reply]);
    }
    return map;
  };
  return {
    child,
    stdout,
    stderr: () => err,
    byChannel,
    send: (text) => child.stdin.write(text),
    replies,
    exited,
  };
}

/** The result and user Squid reads for one channel; fails unless there is exactly one reply on it. */
function answer(helper: Helper, channel: string): string {
  const replies = helper.byChannel().get(channel) ?? [];
  expect(replies, `replies on channel ${channel}: ${JSON.stringify(helper.stdout())}`).toHaveLength(1);
  const [reply] = replies as [SquidReadReply];
  const user = reply.notes.find(([key]) => key === 'user')?.[1];
  return user === undefined ? reply.result : `${reply.result} ${user}`;
}

describe('session-acl helper process', () => {
  it('answers every request once by channel, survives bad input, logs to stderr only, exits 0 at EOF', async () => {
    const web = portal();
    web.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    const bob = web.start({ key: ip('10.0.0.8'), username: 'Bob "the builder" Müller', source: 'portal' });
    web.start({ key: mac('aa:bb:cc:dd:ee:ff'), username: 'carol', source: 'registration' });

    const helper = startHelper();
    helper.send('1 10.0.0.5 - -\n2 10.0.0.6 - -\n');
    await helper.replies(2);
    expect(answer(helper, '1')).toBe('OK alice');
    expect(answer(helper, '2')).toBe('ERR');

    // Garbage: no channel, not an IP, binary, a 100 kB line; then a request split over several writes.
    helper.send('hello world\n');
    helper.send('3 not-an-ip -\n');
    helper.send(Buffer.concat([Buffer.from('4 '), Buffer.from([0xff, 0x00, 0xfe]), Buffer.from(' -\n')]));
    helper.send(`5 ${'x'.repeat(100 * 1024)}\n`);
    helper.send('6 10.0.');
    await sleep(20);
    helper.send('0.8 -');
    await sleep(20);
    helper.send(' -\n7 ::ffff:10.0.0.5 - -\n8 10.0.0.9 AA-BB-CC-DD-EE-FF staff\n9 10.0.0.9 - -\n');
    await helper.replies(10);

    expect(helper.child.exitCode).toBeNull();
    expect(
      helper
        .byChannel()
        .get(undefined)
        ?.map((r) => r.result),
    ).toEqual(['BH']);
    expect(answer(helper, '3')).toBe('BH');
    expect(answer(helper, '4')).toBe('BH');
    expect(answer(helper, '5')).toBe('BH');
    expect(answer(helper, '6')).toBe('OK Bob "the builder" Müller');
    expect(answer(helper, '7')).toBe('OK alice');
    expect(answer(helper, '8')).toBe('OK carol');
    expect(answer(helper, '9')).toBe('ERR');

    // A logout in the web app shows in the next batch, without restarting the helper.
    web.end(ip('10.0.0.5'));
    helper.send('10 10.0.0.5 - -\n');
    await helper.replies(11);
    expect(answer(helper, '10')).toBe('ERR');

    helper.child.stdin.end();
    expect(await helper.exited).toEqual({ code: 0, signal: null });
    expect(helper.stdout()).toHaveLength(11);
    for (const line of helper.stdout()) expect(line).toMatch(REPLY_LINE);
    // The overlong line was logged, on stderr, in the helper's log format.
    expect(helper.stderr()).toMatch(/doorman-session-acl\[\d+\]: .*too long/);
    // Last-seen times are written at exit at the latest.
    expect(web.find(ip('10.0.0.8'))?.lastSeen).toBeGreaterThan(bob.lastSeen);
  }, 15_000);

  it('answers BH while the DB is missing, stays up, and answers OK soon after the DB appears', async () => {
    const helper = startHelper();
    helper.send('1 10.0.0.5 - -\n');
    await helper.replies(1);
    expect(answer(helper, '1')).toBe('BH');
    helper.send('2 10.0.0.5 - -\n3 10.0.0.6 - -\n');
    await helper.replies(3);
    expect(answer(helper, '2')).toBe('BH');
    expect(answer(helper, '3')).toBe('BH');
    expect(helper.stderr()).toMatch(/cannot open session DB/);
    expect(helper.child.exitCode).toBeNull();

    const web = portal();
    web.start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    const appeared = Date.now();
    let channel = 3;
    let ok = false;
    while (!ok && Date.now() - appeared < 2500) {
      channel++;
      helper.send(`${channel} 10.0.0.5 - -\n`);
      await helper.replies(channel);
      const result = answer(helper, String(channel));
      expect(['BH', 'OK alice']).toContain(result);
      ok = result === 'OK alice';
      if (!ok) await sleep(100);
    }
    expect(ok).toBe(true);
    expect(Date.now() - appeared).toBeLessThan(2000);
    for (const line of helper.stdout()) expect(line).toMatch(REPLY_LINE);

    helper.child.stdin.end();
    expect(await helper.exited).toEqual({ code: 0, signal: null });
  }, 15_000);

  it('answers BH while its configuration is broken, and recovers once it is mended, without exiting', async () => {
    writeFileSync(configPath, JSON.stringify({ stateDir: dir, squid: { ttl: 'five' } }));
    const helper = startHelper();
    helper.send('1 10.0.0.5 - -\n');
    await helper.replies(1);
    expect(answer(helper, '1')).toBe('BH');
    expect(helper.stderr()).toMatch(/squid\.ttl: /);
    expect(helper.child.exitCode).toBeNull();

    writeFileSync(configPath, JSON.stringify({ stateDir: dir }));
    portal().start({ key: ip('10.0.0.5'), username: 'alice', source: 'api' });
    await sleep(1100); // it retries at most once a second
    helper.send('2 10.0.0.5 - -\n');
    await helper.replies(2);
    expect(answer(helper, '2')).toBe('OK alice');
    helper.child.stdin.end();
    expect(await helper.exited).toEqual({ code: 0, signal: null });
  }, 15_000);
});
