/**
 * The login API's web app (portal/app.ts createApp, portal/server.ts startServer) with parts taken out, to
 * see what each part of a login costs. Not Doorman's `serve`: no privilege drop, so run it as the user who
 * owns the DB.
 *
 *   node bench/lib/login-app.ts --config FILE [--stores db|memory] [--log stderr|none]
 *
 *   --stores db      the real SQLite store on the configured DB (what `doorman serve` uses)
 *   --stores db-key-cached  the real stores, but a key that verified once is then taken from memory: what a
 *                    login costs without the api_keys UPDATE (last_used_at) that verify() commits every time
 *   --stores memory  stand-ins that keep nothing: start() returns a session, verify() says yes — the app
 *                    without any SQLite work
 *   --log none       the request log (one line per request, stderr) goes nowhere
 *   --pragma P       with the SQLite stores: also run PRAGMA P after opening (repeatable), e.g.
 *                    wal_autocheckpoint=0 to see what the checkpoints inside requests cost
 *   --time-stores    with --stores db: time every start() write (its statement in the shared transaction) and
 *                    verify() call (wall clock, in the server) and print the mean per call on stderr when stopped
 * Stops on SIGTERM.
 */
import { parseArgs } from 'node:util';
import { systemClock } from '../../lib/clock.ts';
import { dbPath, loadConfig } from '../../lib/config/load.ts';
import { ensureProxyKey, ProxyKeyCheck, proxyKeyPath } from '../../lib/security/proxy-key.ts';
import { openDatabase } from '../../lib/store/database.ts';
import { directoryPasswordPath } from '../../lib/store/directory-settings-store.ts';
import type { Commits } from '../../lib/store/group-commit.ts';
import type { Session, StartSession } from '../../lib/store/session.ts';
import { openSqliteStore } from '../../lib/store/sqlite-store.ts';
import type { ApiKeyRepository, SessionRepository } from '../../lib/store/store.ts';
import { createApp } from '../../portal/app.ts';
import { startServer } from '../../portal/server.ts';

const { values } = parseArgs({
  options: {
    config: { type: 'string' },
    stores: { type: 'string', default: 'db' },
    log: { type: 'string', default: 'stderr' },
    'time-stores': { type: 'boolean', default: false },
    pragma: { type: 'string', multiple: true, default: [] },
  },
});
const { config } = loadConfig(values.config);

let sessions: SessionRepository;
let apiKeys: Pick<ApiKeyRepository, 'check'>;
let close = (): Promise<void> => Promise.resolve();
if (values.stores === 'db' || values.stores === 'db-key-cached') {
  const db = openDatabase(dbPath(config));
  for (const p of values.pragma) db.pragma(p);
  const timers = values['time-stores'] ? storeTimers() : undefined;
  // Timed: each write's own SQLite work inside the shared transaction (start(): the upsert), not the commit.
  const wrapCommits = (group: Commits): Commits =>
    timers === undefined ? group : { run: (write) => group.run(timers.start(write)) };
  const store = openSqliteStore(db, { passwordFile: directoryPasswordPath(config), wrapCommits });
  sessions = store.sessions;
  const check = timers === undefined ? store.apiKeys.check : timers.verify(store.apiKeys.check);
  apiKeys = { check };
  close = () => store.close();
  if (values.stores === 'db-key-cached') {
    const verified = new Map<string, string>();
    apiKeys = {
      check: (key) => {
        const name = verified.get(key) ?? check(key);
        if (name !== undefined) verified.set(key, name);
        return name;
      },
    };
  }
} else if (values.stores === 'memory') {
  let id = 0;
  const start = (input: StartSession): Promise<Session> => {
    const now = Date.now();
    return Promise.resolve({
      id: ++id,
      key: input.key,
      username: input.username,
      source: input.source,
      createdAt: now,
      lastSeen: now,
      expiresAt: undefined,
      idleTimeoutMs: undefined,
    });
  };
  // Only what the login route calls.
  sessions = { start, find: () => undefined } as unknown as SessionRepository;
  apiKeys = { check: (key: string) => (key.startsWith('dm.') ? 'bench' : undefined) };
} else {
  console.error('--stores is db or memory');
  process.exit(2);
}

/** Timers around start()'s write and verify(); reported on stop. */
function storeTimers() {
  const totals = { start: { ms: 0, calls: 0 }, verify: { ms: 0, calls: 0 } };
  const timed =
    <A extends unknown[], T>(name: keyof typeof totals, work: (...args: A) => T) =>
    (...args: A): T => {
      const t = performance.now();
      try {
        return work(...args);
      } finally {
        totals[name].ms += performance.now() - t;
        totals[name].calls++;
      }
    };
  process.once('exit', () => {
    for (const [name, { ms, calls }] of Object.entries(totals)) {
      console.error(
        `login-app: ${name}() ${calls} calls, mean ${calls ? ((1000 * ms) / calls).toFixed(1) : '-'} µs`,
      );
    }
  });
  return {
    start: <T>(write: () => T) => timed('start', write),
    verify: (check: (key: string) => string | undefined) => timed('verify', check),
  };
}

const log =
  values.log === 'none'
    ? () => {}
    : (line: string) =>
        void process.stderr.write(`${new Date().toISOString()} doorman[${process.pid}]: ${line}\n`);

const server = await startServer(
  createApp({
    config,
    sessions,
    apiKeys,
    // the load generator's "proxied" mode sends X-Doorman-Client with this key, as Squid does
    proxyKey: new ProxyKeyCheck(ensureProxyKey(proxyKeyPath(config))),
    clock: systemClock,
    log,
  }),
  config.listen,
);
console.error(
  `login-app: stores=${values.stores} log=${values.log} on ${config.listen.map((l) => `${l.host}:${l.port}`).join(', ')}`,
);
process.once('SIGTERM', () => {
  void server
    .close()
    .then(close)
    .then(() => process.exit(0));
});
