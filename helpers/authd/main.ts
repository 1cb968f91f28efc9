/**
 * doorman-authd: the one long-lived process behind every helper Squid runs (docs/seamless-design.md §1), a
 * service of its own (docs/services.md). Squid's children are `dist/bin/doorman-shim [--concurrent]
 * <stateDir>/run/<kind>.sock` (about 1 MB each); each shim holds one connection here, and this process answers
 * them all:
 *
 *   session.sock    the session lookup (helpers/authd/session-service.ts), channel-IDs on
 *   basic.sock      Basic passwords against the directory (directory-service.ts), channel-IDs on
 *   group.sock      group membership, the same directory, channel-IDs on
 *   negotiate.sock  one Negotiate handshake per connection (seamless-service.ts), no channel-IDs
 *   ntlm.sock       one NTLM handshake per connection, the same
 *
 *   node --max-semi-space-size=2 dist/helpers/authd/main.js [--config FILE] [--ready-fd N]
 *
 * Run by `doorman authd` (cli/commands/authd.ts, under systemd: systemd/doorman-authd.service) or started by
 * `doorman serve` (helpers/authd/supervisor.ts), in a session of its own: it outlives serve. Started as root
 * it runs as the service user. Its sockets come from systemd (LISTEN_FDS), from a predecessor
 * (DOORMAN_LISTEN_FDS), or are made here. Ready (sd_notify READY=1, "READY=1\n" on --ready-fd, the pid file,
 * the "listening in" log line) once a session lookup is answered through its own socket.
 *
 * Signals: SIGTERM or SIGINT: stop accepting, answer what was read (at most STOP_GRACE_MS), close everything,
 * exit 0. SIGHUP: a planned restart keeping the sockets (handover.ts), then the same stop. Logs go to stderr.
 * What only some kinds need (LDAP, Kerberos, ntlm_auth) is loaded on the first connection of such a kind, so
 * an authd with no directory and no seamless authentication stays small.
 */
import { closeSync, mkdirSync, writeSync } from 'node:fs';
import { boundPaths } from './bound-paths.ts';
import { authdEnvironment } from './environment.ts';
import { PassThrough } from 'node:stream';
import { parseArgs } from 'node:util';
import { dbPath, loadConfig } from '../../lib/config/load.ts';
import { runHelper } from '../../lib/helper-protocol/run.ts';
import { daemonLog, type Log, stderrLog } from '../../lib/log.ts';
import {
  HELPER_KINDS,
  helperSocket,
  runDir,
  seamlessPaths,
  type HelperKind,
} from '../../lib/seamless/paths.ts';
import { systemClock } from '../../lib/clock.ts';
import { directoryPasswordPath } from '../../lib/store/directory-settings-store.ts';
import { authdProcessMetrics } from '../../lib/metrics/authd.ts';
import { directoryMetrics } from '../../lib/metrics/directory.ts';
import { countedHandlers, lookupMetrics, type LookupKind } from '../../lib/metrics/lookups.ts';
import { metricsServed, processRegistry } from '../../lib/metrics/registry.ts';
import { seamlessMetrics } from '../../lib/metrics/seamless.ts';
import { storeMetrics } from '../../lib/metrics/store.ts';
import { openDatabase } from '../../lib/store/database.ts';
import { systemdNotifier, watchdogUsecOf } from '../../lib/system/sd-notify.ts';
import { dropPrivileges } from '../../lib/system/service-user.ts';
import type { DirectoryCheck, DirectoryService } from './directory-service.ts';
import { startSuccessor } from './handover.ts';
import { inheritedFds, matchKinds, type InheritedFrom } from './listen-fds.ts';
import { listenHelperSockets, makeRunDir, type ConnectionHandler, type HelperSocket } from './listener.ts';
import { metricsSocketPath, serveMetricsSocket, type MetricsSocket } from './metrics-socket.ts';
import { pidFilePath, removePidFile, writePidFile } from './pid-file.ts';
import { PROBE_ADDRESS, PROBE_LINE } from './probe.ts';
import { EXPLAIN_LOOKUP_WORD } from '../../lib/helper-protocol/explain-lookup.ts';
import type { SeamlessService } from './seamless-service.ts';
import { LastSeamlessResults } from '../../lib/seamless/last-results.ts';
import { withSeamlessQuery } from './seamless-query.ts';
import type { HelperHandlers } from '../../lib/helper-protocol/run.ts';
import { createSessionService } from './session-service.ts';

/** After SIGTERM, answers still owed get this long; then the connections are cut (the shims ask again). */
const STOP_GRACE_MS = 5000;
/** A successor must answer within this long, or the restart is called off (this process goes on). */
const SUCCESSOR_READY_MS = 30_000;
/** How often the socket files are checked (an authd whose files were removed or replaced is unreachable). */
const CHECK_FILES_MS = 2000;
/** Until the first lookup is answered, it is asked again this often. */
const READY_RETRY_MS = 200;
/** On PostgreSQL, how long the first load is waited for before the sockets take connections (see below). */
const LOAD_BEFORE_LISTEN_MS = 20_000;

// stderr until --log-file is open (after root is given up): what stops the start goes to whoever started authd.
let sink: Log = stderrLog('doorman-authd');
const log: Log = (line) => sink(line);
// stderr is serve's pipe or a log file; a reader gone (EPIPE) must not kill the process Squid depends on.
process.stderr.on('error', () => {});
// One line for what stops the start (a bad config, a live authd on the sockets), not a stack trace.
process.on('uncaughtException', (error) => {
  log(`cannot go on: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
const { values } = parseArgs({
  options: { config: { type: 'string' }, 'ready-fd': { type: 'string' }, 'log-file': { type: 'string' } },
});
const readyFd = values['ready-fd'] === undefined ? undefined : Number(values['ready-fd']);
if (readyFd !== undefined && !(Number.isInteger(readyFd) && readyFd >= 3))
  throw new Error(
    `--ready-fd: expected a descriptor number from 3, got ${JSON.stringify(values['ready-fd'])}`,
  );
const { config } = loadConfig(values.config);
const stateDir = config.stateDir;
// Run directly (systemd/doorman-authd.service) rather than by serve or `doorman authd`: the Kerberos
// environment from the config, set before anything reads it (the acceptor loads on the first Negotiate
// connection; libuv's thread pool starts on the first file or DNS job).
process.env = authdEnvironment(config, process.env);
const notifier = systemdNotifier(log);
const watchdogUsec = watchdogUsecOf(process.env, process.pid);
delete process.env.WATCHDOG_USEC;
delete process.env.WATCHDOG_PID;
// This process's metrics, read by serve through <stateDir>/authd-metrics.sock (docs/metrics.md).
const metricsOn = metricsServed(config.metrics);
const registry = processRegistry('authd', { defaults: metricsOn });
lookupMetrics();
authdProcessMetrics();
directoryMetrics();
storeMetrics({ process: 'authd' });
let seamlessNow: SeamlessService | undefined;
seamlessMetrics(() => {
  const counts = seamlessNow?.counts();
  return counts === undefined ? undefined : { inUse: counts.leases, waiting: counts.waiting };
});
/** Each answer counted under its kind (lib/metrics/lookups.ts). */
const counted = (kind: LookupKind, handlers: HelperHandlers): HelperHandlers =>
  // serve's probe (supervisor.ts, every second) and explain's lookups are not Squid's.
  countedHandlers(kind, handlers, (request) => {
    const first = request.fields[0];
    return first === PROBE_ADDRESS || first === EXPLAIN_LOOKUP_WORD;
  });

// Root gives up root before anything is opened (as serve does); systemd's User= has done it already.
dropPrivileges(config);
// Started by serve or `doorman authd start` (not by systemd, whose journal takes stderr): a log of its own, so
// that it holds nothing of its starter's (a pipe held open would keep the starter's reader waiting for ever).
const logFile = values['log-file'];
if (logFile !== undefined) sink = daemonLog('doorman-authd', logFile);
const inherited = inheritedFds(process.env, process.pid);
// Not passed on: a child (ntlm_auth, a successor) must not take these descriptors for its own.
delete process.env.LISTEN_FDS;
delete process.env.LISTEN_PID;
delete process.env.LISTEN_FDNAMES;
delete process.env.DOORMAN_LISTEN_FDS;
// systemd's socket units make the run directory; otherwise it is ours, as the helper user.
if (inherited?.from !== 'systemd') makeRunDir(runDir(stateDir));
// The Kerberos replay cache must be the helper user's own (the acceptor writes it as authd).
mkdirSync(seamlessPaths(config).rcacheDir, { recursive: true, mode: 0o700 });
// The session DB made (and migrated) now, not at the first lookup: "ready" means lookups are answered, and
// on a fresh machine authd may start before the web app ever has.
openDatabase(dbPath(config)).close();

// Sessions (and the directory's settings) from the site's shared PostgreSQL, or from this box's SQLite DB.
const { store } = config;
const shared =
  store.kind === 'postgres'
    ? await (async () => {
        const { postgresBox } = await import('../../lib/store/postgres/store.ts');
        const { PgDirectorySettings } = await import('../../lib/store/postgres/directory-settings.ts');
        const box = postgresBox(store, { applicationName: 'doorman-authd', log, max: 2 });
        // Registered before the first load, so that one load brings both.
        const directorySettings = new PgDirectorySettings(box.sql, box.replica, {
          passwordFile: directoryPasswordPath(config),
          clock: systemClock,
        });
        const { createPgSessionService } = await import('./pg-session-service.ts');
        const session = createPgSessionService({
          box,
          flushEveryMs: config.lastSeenFlushSeconds * 1000,
          log,
        });
        return { session, directorySettings };
      })()
    : undefined;
const session =
  shared?.session ??
  createSessionService({
    settings: () => ({ path: dbPath(config), flushEveryMs: config.lastSeenFlushSeconds * 1000 }),
    log,
  });

let directory: Promise<DirectoryService> | undefined;
const directoryService = () =>
  (directory ??= import('./directory-service.ts').then((m) =>
    m.createDirectoryService({
      config: () => config,
      log,
      ...(shared === undefined ? {} : { settings: shared.directorySettings }),
    }),
  ));
const directoryHandler =
  (kind: LookupKind, check: () => Promise<DirectoryCheck>): ConnectionHandler =>
  async (input, output) => {
    const [service, checker] = await Promise.all([directoryService(), check()]);
    await runHelper({
      input,
      output,
      channelIds: true,
      log,
      cacheLogInline: true,
      ...counted(kind, service.handlers(checker)),
    });
  };

// The last seamless result per client address, for `doorman explain` (asked on the session socket).
const seamlessResults = new LastSeamlessResults();
let seamless: Promise<SeamlessService> | undefined;
const seamlessService = () =>
  (seamless ??= import('./seamless-service.ts')
    .then((m) =>
      m.createSeamlessService({
        stateDir,
        sambaDir: config.sambaDir,
        dbPath: dbPath(config),
        log,
        // The ntlm_auth pool is sized to what Squid's children can ask for at once.
        children: {
          negotiate: config.squid.seamless.negotiateChildren,
          ntlm: config.squid.seamless.ntlmChildren,
        },
        results: seamlessResults,
      }),
    )
    .then((service) => (seamlessNow = service)));

const handlers: Record<HelperKind, ConnectionHandler> = {
  session: (input, output) =>
    runHelper({
      input,
      output,
      channelIds: true,
      log,
      // Squid's lookups counted; explain's seamless-last questions (and serve's probe) not.
      ...withSeamlessQuery(counted('session', session.handlers), seamlessResults),
    }),
  basic: directoryHandler('basic', () => import('../basic-auth-check.ts').then((m) => m.checkBasic)),
  group: directoryHandler('group', () => import('../group-check.ts').then((m) => m.checkGroups)),
  negotiate: async (input, output) => (await seamlessService()).serve('negotiate', input, output),
  ntlm: async (input, output) => (await seamlessService()).serve('ntlm', input, output),
};
const expected = Object.fromEntries(HELPER_KINDS.map((k) => [k, helperSocket(stateDir, k)])) as Record<
  HelperKind,
  string
>;
const { sockets, kindOf } = await socketsToServe(inherited);
// The files are ours to remove and to watch unless they are the service manager's.
const ownFiles = inherited?.from !== 'systemd';
// A fresh authd names itself before it is ready, so that one that cannot get ready (its store unreachable) can
// still be stopped; a restart's successor only once ready (until then the file names the one that answers).
const pidFile = pidFilePath(runDir(stateDir));
if (ownFiles && inherited === undefined) writePidFile(pidFile, process.pid);
// On PostgreSQL the sessions are loaded before the first connection is taken: a shim connected earlier (at a
// cold start, or to a restart's successor on the inherited sockets) would get BH meanwhile. Not for ever: a
// PostgreSQL that cannot be reached is waited for LOAD_BEFORE_LISTEN_MS, then authd listens anyway and answers
// BH until it can load (logged), so that it can be seen, probed and stopped.
if (shared !== undefined) {
  let waited: NodeJS.Timeout | undefined;
  await Promise.race([
    shared.session.loaded,
    new Promise((resolve) => (waited = setTimeout(resolve, LOAD_BEFORE_LISTEN_MS))),
  ]);
  clearTimeout(waited);
}
const listener = await listenHelperSockets(sockets, log, ownFiles);
// Metrics are not worth failing authd over: without the socket, serve's scrape says doorman_authd_up 0.
const metricsSocket: MetricsSocket | undefined = !metricsOn
  ? undefined
  : await serveMetricsSocket(metricsSocketPath(stateDir), registry, log).catch((error: unknown) => {
      log(`metrics: cannot listen: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    });

await untilAnswered();
if (ownFiles && inherited !== undefined) writePidFile(pidFile, process.pid);
const how = inherited === undefined ? 'made here' : `from ${inherited.from}`;
log(`listening in ${runDir(stateDir)} (sockets ${how}); config ${values.config ?? '(default)'}`);
notifier?.notify(`READY=1\nSTATUS=answering on ${sockets.length} sockets\nMAINPID=${process.pid}`);
if (readyFd !== undefined) {
  writeSync(readyFd, 'READY=1\n');
  closeSync(readyFd);
}

// The watchdog is pinged from this event loop: a stopped or spinning authd stops pinging, and systemd
// kills and restarts it (WatchdogSec=). Half the interval, as sd_watchdog_enabled(3) advises.
const watchdog =
  watchdogUsec === undefined
    ? undefined
    : setInterval(() => notifier?.notify('WATCHDOG=1'), Math.max(1, Math.floor(watchdogUsec / 2000)));

const reason = await new Promise<string>((resolve) => {
  process.once('SIGTERM', () => resolve('SIGTERM'));
  process.once('SIGINT', () => resolve('SIGINT'));
  let restarting = false;
  process.on('SIGHUP', () => {
    if (restarting) return log('SIGHUP: a restart is under way already');
    if (!ownFiles)
      return log('SIGHUP: the sockets are systemd\'s; restart with "systemctl restart doorman-authd"');
    restarting = true;
    log('SIGHUP: starting a successor on the same sockets');
    void handOver().then((pid) => {
      restarting = false;
      if (pid !== undefined) resolve(`handed over to pid ${pid}`);
    });
  });
  // No new shim reaches an authd whose files are gone (stateDir removed, another authd put in its place).
  const files = setInterval(() => {
    const gone = ownFiles ? listener.missing() : undefined;
    if (gone !== undefined) resolve(`${gone} is no longer this process's socket`);
  }, CHECK_FILES_MS);
  files.unref();
});
log(`${reason}: stopping (${listener.connections()} connections)`);
notifier?.notify('STOPPING=1');
clearInterval(watchdog);
const handedOver = reason.startsWith('handed over');
await listener.close(STOP_GRACE_MS, handedOver || !ownFiles);
await metricsSocket?.close();
if (ownFiles) removePidFile(pidFile, process.pid);
await session.close();
await Promise.all([directory?.then((d) => d.close()), seamless?.then((s) => s.close())]);
notifier?.close();
log('stopped');
// LDAP timers of requests cut off by an outage may linger for a whole timeout: leave now.
process.exit(0);

/** What to listen on: the inherited descriptors matched to kinds, or every kind's path made here. */
async function socketsToServe(
  from: { from: InheritedFrom; fds: Array<{ fd: number; name: string }> } | undefined,
): Promise<{ sockets: HelperSocket[]; kindOf: Map<string, HelperKind> }> {
  if (from === undefined) {
    const sockets = HELPER_KINDS.map((k) => ({ path: expected[k], handler: handlers[k] }));
    return { sockets, kindOf: new Map(HELPER_KINDS.map((k) => [expected[k], k])) };
  }
  const paths = boundPaths(from.fds.map((f) => f.fd));
  const byKind = matchKinds(from.fds, expected, (fd) => paths.get(fd));
  const sockets = [...byKind].map(([k, fd]) => ({
    path: paths.get(fd) ?? expected[k],
    handler: handlers[k],
    fd,
  }));
  const missing = HELPER_KINDS.filter((k) => !byKind.has(k));
  if (missing.length > 0) log(`no socket for ${missing.join(', ')}: those helpers are not served`);
  return { sockets, kindOf: new Map(sockets.map((s, i) => [s.path, [...byKind.keys()][i] as HelperKind])) };
}

/**
 * Resolves once a session lookup is answered OK or ERR (the DB is read), asked of the very handlers every
 * connection gets. In-process rather than through the socket: during a handover the predecessor accepts on
 * the same sockets and could answer in our place; that ours listen is what listenHelperSockets resolved on.
 */
async function untilAnswered(): Promise<void> {
  let said = '';
  for (;;) {
    const input = new PassThrough();
    const output = new PassThrough();
    let answer = '';
    output.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    const done = runHelper({ input, output, channelIds: true, log, ...session.handlers });
    input.end(PROBE_LINE);
    await done;
    const line = answer.split('\n')[0] ?? '';
    if (/^0 (?:OK|ERR)\b/.test(line)) return;
    if (line !== said) log(`not ready yet: the session lookup answered ${JSON.stringify(line)}`);
    said = line;
    await new Promise((resolve) => setTimeout(resolve, READY_RETRY_MS));
  }
}

/** SIGHUP: a successor on our sockets, ready; undefined (and a log line) if it could not be had. */
async function handOver(): Promise<number | undefined> {
  const byKind = new Map<HelperKind, number>();
  for (const [path, fd] of listener.descriptors()) {
    const kind = kindOf.get(path);
    if (kind !== undefined) byKind.set(kind, fd);
  }
  const result = await startSuccessor({
    execPath: process.execPath,
    execArgv: process.execArgv,
    script: process.argv[1] ?? '',
    args: [
      ...(values.config === undefined ? [] : ['--config', values.config]),
      ...(logFile === undefined ? [] : ['--log-file', logFile]),
    ],
    env: process.env,
    sockets: byKind,
    readyTimeoutMs: SUCCESSOR_READY_MS,
  });
  if (!result.ok) {
    log(`restart called off, still serving: ${result.reason}`);
    return undefined;
  }
  return result.pid;
}
