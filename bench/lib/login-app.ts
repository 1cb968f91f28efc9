/**
 * The login API's web app (portal/app.ts createApp, portal/server.ts startServer) with parts taken out, to
 * see what each part of a login costs. Not Doorman's `serve`: no privilege drop, so run it as the user who
 * owns the DB.
 *
 *   node bench/lib/login-app.ts --config FILE [--stores db|memory] [--log stderr|none]
 *
 *   --stores db      the real SessionStore and ApiKeyStore on the configured DB (what `doorman serve` uses)
 *   --stores db-key-cached  the real stores, but a key that verified once is then taken from memory: what a
 *                    login costs without the api_keys UPDATE (last_used_at) that verify() commits every time
 *   --stores memory  stand-ins that keep nothing: start() returns a session, verify() says yes — the app
 *                    without any SQLite work
 *   --log none       the request log (one line per request, stderr) goes nowhere
 *   --pragma P       with the SQLite stores: also run PRAGMA P after opening (repeatable), e.g.
 *                    wal_autocheckpoint=0 to see what the checkpoints inside requests cost
 *   --time-stores    with --stores db: time every start() and verify() call (wall clock, in the server) and
 *                    print the mean per call on stderr when stopped
 * Stops on SIGTERM.
 */
import { parseArgs } from 'node:util';
import { systemClock } from '../../lib/clock.ts';
import { dbPath, loadConfig } from '../../lib/config/load.ts';
import { ensureProxyKey, ProxyKeyCheck, proxyKeyPath } from '../../lib/security/proxy-key.ts';
import { ApiKeyStore } from '../../lib/store/api-key-store.ts';
import { openDatabase } from '../../lib/store/database.ts';
import { GroupCommit, type Commits } from '../../lib/store/group-commit.ts';
import { SessionStore, type Session, type StartSession } from '../../lib/store/session-store.ts';
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

let sessions: SessionStore;
let apiKeys: ApiKeyStore;
// Stand-in stores commit nothing: their writes run at once.
let commits: Commits = { run: (write) => Promise.resolve(write()) };
let close = (): void => {};
if (values.stores === 'db' || values.stores === 'db-key-cached') {
  const db = openDatabase(dbPath(config));
  for (const p of values.pragma) db.pragma(p);
  sessions = new SessionStore(db, systemClock);
  commits = new GroupCommit(db);
  apiKeys = new ApiKeyStore(db, systemClock);
  close = () => db.close();
  if (values['time-stores']) timeStores(sessions, apiKeys);
  if (values.stores === 'db-key-cached') {
    const verified = new Set<string>();
    const verify = apiKeys.verify.bind(apiKeys);
    apiKeys.verify = (key) => verified.has(key) || (verify(key) && verified.add(key) !== undefined);
  }
} else if (values.stores === 'memory') {
  let id = 0;
  const start = (input: StartSession): Session => {
    const now = Date.now();
    return {
      id: ++id,
      key: input.key,
      username: input.username,
      source: input.source,
      createdAt: now,
      lastSeen: now,
      expiresAt: undefined,
      idleTimeoutMs: undefined,
    };
  };
  // Only what the login route calls; the classes have private fields, so these cannot be typed as them.
  sessions = { start } as unknown as SessionStore;
  apiKeys = { verify: (key: string) => key.startsWith('dm.') } as unknown as ApiKeyStore;
} else {
  console.error('--stores is db or memory');
  process.exit(2);
}
/** Wrap start() and verify() of these instances in timers; report on stop. */
function timeStores(s: SessionStore, k: ApiKeyStore): void {
  const totals = { start: { ms: 0, calls: 0 }, verify: { ms: 0, calls: 0 } };
  const start = s.start.bind(s);
  const verify = k.verify.bind(k);
  s.start = (input) => {
    const t = performance.now();
    try {
      return start(input);
    } finally {
      totals.start.ms += performance.now() - t;
      totals.start.calls++;
    }
  };
  k.verify = (key) => {
    const t = performance.now();
    try {
      return verify(key);
    } finally {
      totals.verify.ms += performance.now() - t;
      totals.verify.calls++;
    }
  };
  process.once('exit', () => {
    for (const [name, { ms, calls }] of Object.entries(totals)) {
      console.error(
        `login-app: ${name}() ${calls} calls, mean ${calls ? ((1000 * ms) / calls).toFixed(1) : '-'} µs`,
      );
    }
  });
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
    commits,
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
  void server.close().then(() => {
    close();
    process.exit(0);
  });
});
