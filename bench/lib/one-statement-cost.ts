/**
 * Whether a login could learn whom it replaces from its write alone, without SessionStore.startReplacing's read:
 * in one process, on the real schema (a fresh DB through openDatabase), SESSIONS preloaded sessions and
 * --batch logins a transaction, alternating rounds of
 *   read+write  SessionStore.startReplacing: the live session read (three columns, positional), then a renewal
 *               updated in place or INSERT OR REPLACE
 *   one         one upsert that writes the session it replaces into the new row (two columns added for the
 *               bench: replaced, replaced_source), the id moved for a replacement (a trigger keeping
 *               sqlite_sequence past it, so an id is still never reused), RETURNING the row
 * for renewals (--users same) and replacements (--users next). Prints one JSON line: the median CPU µs a login.
 *
 *   node bench/lib/one-statement-cost.ts [--sessions 10000] [--batch 50] [--logins 20000] [--rounds 9]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { systemClock } from '../../lib/clock.ts';
import { openDatabase } from '../../lib/store/database.ts';
import { SessionStore } from '../../lib/store/session-store.ts';
import type { StartSession } from '../../lib/store/session.ts';
import { benchKey, benchUser, type LoginUsers, loginUser } from './figures.ts';

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '10000' },
    batch: { type: 'string', default: '50' },
    logins: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '9' },
  },
});
const sessions = Number(values.sessions);
const batch = Number(values.batch);
const logins = Number(values.logins);
const rounds = Number(values.rounds);

const LIVE = '(sessions.expires_at IS NULL OR sessions.expires_at > @now)';
const RENEWAL = `(sessions.username = excluded.username AND sessions.source = excluded.source AND ${LIVE})`;
const ONE = `INSERT INTO sessions (key_kind, key, username, source, created_at, last_seen, expires_at, idle_timeout, mac)
  VALUES (@kind, @key, @username, @source, @now, @now, @expiresAt, NULL, NULL)
  ON CONFLICT (key_kind, key) DO UPDATE SET
    id = CASE WHEN ${RENEWAL} THEN sessions.id ELSE (SELECT seq + 1 FROM sqlite_sequence WHERE name = 'sessions') END,
    replaced = CASE WHEN ${LIVE} AND NOT ${RENEWAL} THEN sessions.username END,
    replaced_source = CASE WHEN ${LIVE} AND NOT ${RENEWAL} THEN sessions.source END,
    username = excluded.username, source = excluded.source, created_at = excluded.created_at,
    last_seen = excluded.last_seen, expires_at = excluded.expires_at, idle_timeout = NULL, mac = NULL
  RETURNING *`;

type Way = 'read+write' | 'one';

/** CPU µs a login, median of the rounds, on a fresh DB. */
function measure(way: Way, users: LoginUsers): number {
  const dir = mkdtempSync(join(tmpdir(), 'doorman-one-statement-'));
  const db = openDatabase(join(dir, 'doorman.db'));
  try {
    const store = new SessionStore(db, systemClock);
    const start = (i: number, user: number): StartSession => ({
      key: { kind: 'ip', value: benchKey(i) },
      username: benchUser(user),
      source: 'api',
      expiresAt: Date.now() + 3_600_000,
    });
    db.transaction(() => {
      for (let i = 0; i < sessions; i++) store.start(start(i, i));
    })();
    let login: (input: StartSession) => unknown = (input) => store.startReplacing(input);
    if (way === 'one') {
      db.exec(`ALTER TABLE sessions ADD COLUMN replaced TEXT; ALTER TABLE sessions ADD COLUMN replaced_source TEXT;
        CREATE TRIGGER sessions_id_moved AFTER UPDATE OF id ON sessions BEGIN
          UPDATE sqlite_sequence SET seq = max(seq, NEW.id) WHERE name = 'sessions'; END;`);
      const one = db.prepare(ONE);
      login = (input) =>
        one.get({
          kind: input.key.kind,
          key: input.key.value,
          username: input.username,
          source: input.source,
          now: Date.now(),
          expiresAt: input.expiresAt,
        });
    }
    let n = 0;
    const step = db.transaction(() => {
      for (let j = 0; j < batch; j++, n++) {
        const i = n % sessions;
        login(start(i, loginUser(users, i, n, sessions)));
      }
    });
    const perLogin: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const before = process.cpuUsage();
      for (let b = 0; b < logins / batch; b++) step.immediate();
      const used = process.cpuUsage(before);
      perLogin.push((used.user + used.system) / logins);
    }
    perLogin.sort((a, b) => a - b);
    return perLogin[rounds >> 1] as number;
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const result: Record<string, number> = {};
for (const users of ['same', 'next'] as const) {
  for (const way of ['read+write', 'one'] as const) {
    result[`${users === 'same' ? 'renewal' : 'replacement'}_${way === 'one' ? 'one' : 'read_write'}_us`] =
      Math.round(measure(way, users) * 100) / 100;
  }
}
console.log(JSON.stringify({ bench: 'one-statement-cost', sessions, batch, logins, rounds, ...result }));
