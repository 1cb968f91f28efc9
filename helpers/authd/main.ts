/**
 * doorman-authd: the one long-lived process behind every helper Squid runs (docs/seamless-design.md §1).
 * Squid's children are `dist/bin/doorman-shim [--concurrent] <stateDir>/run/<kind>.sock` (about 1 MB each);
 * each shim holds one connection here, and this process answers them all:
 *
 *   session.sock    the session lookup (helpers/authd/session-service.ts), channel-IDs on
 *   basic.sock      Basic passwords against the directory (directory-service.ts), channel-IDs on
 *   group.sock      group membership, the same directory, channel-IDs on
 *   negotiate.sock  one Negotiate handshake per connection (seamless-service.ts), no channel-IDs
 *   ntlm.sock       one NTLM handshake per connection, the same
 *
 *   node --max-semi-space-size=2 dist/helpers/authd/main.js [--config FILE]
 *
 * `doorman serve` starts and supervises it (helpers/authd/supervisor.ts), as the helper user, with the
 * Kerberos environment set. Logs go to stderr (serve's log). SIGTERM or SIGINT: stop accepting, answer what
 * was read, exit 0. What only some kinds need (LDAP, Kerberos, ntlm_auth) is loaded on the first connection
 * of such a kind, so an authd with no directory and no seamless authentication stays small.
 */
import { parseArgs } from 'node:util';
import { dbPath, loadConfig } from '../../lib/config/load.ts';
import { runHelper } from '../../lib/helper-protocol/run.ts';
import { stderrLog } from '../../lib/log.ts';
import { helperSocket, runDir } from '../../lib/seamless/paths.ts';
import type { DirectoryCheck, DirectoryService } from './directory-service.ts';
import { listenHelperSockets, makeRunDir, type ConnectionHandler } from './listener.ts';
import type { SeamlessService } from './seamless-service.ts';
import { createSessionService } from './session-service.ts';

/** After SIGTERM, answers still owed get this long; then the connections are cut (the shims answer BH). */
const STOP_GRACE_MS = 5000;

const log = stderrLog('doorman-authd');
const { values } = parseArgs({
  options: { config: { type: 'string' }, 'exit-with-parent': { type: 'boolean', default: false } },
});
const { config } = loadConfig(values.config);
const stateDir = config.stateDir;
makeRunDir(runDir(stateDir));

const session = createSessionService({
  settings: () => ({ path: dbPath(config), flushEveryMs: config.lastSeenFlushSeconds * 1000 }),
  log,
});

let directory: Promise<DirectoryService> | undefined;
const directoryService = () =>
  (directory ??= import('./directory-service.ts').then((m) =>
    m.createDirectoryService({ config: () => config, log }),
  ));
const directoryHandler =
  (check: () => Promise<DirectoryCheck>): ConnectionHandler =>
  async (input, output) => {
    const [service, checker] = await Promise.all([directoryService(), check()]);
    await runHelper({
      input,
      output,
      channelIds: true,
      log,
      cacheLogInline: true,
      ...service.handlers(checker),
    });
  };

let seamless: Promise<SeamlessService> | undefined;
const seamlessService = () =>
  (seamless ??= import('./seamless-service.ts').then((m) =>
    m.createSeamlessService({ stateDir, sambaDir: config.sambaDir, dbPath: dbPath(config), log }),
  ));

const listener = await listenHelperSockets(
  [
    {
      path: helperSocket(stateDir, 'session'),
      handler: (input, output) => runHelper({ input, output, channelIds: true, log, ...session.handlers }),
    },
    {
      path: helperSocket(stateDir, 'basic'),
      handler: directoryHandler(() => import('../basic-auth-check.ts').then((m) => m.checkBasic)),
    },
    {
      path: helperSocket(stateDir, 'group'),
      handler: directoryHandler(() => import('../group-check.ts').then((m) => m.checkGroups)),
    },
    {
      path: helperSocket(stateDir, 'negotiate'),
      handler: async (input, output) => (await seamlessService()).serve('negotiate', input, output),
    },
    {
      path: helperSocket(stateDir, 'ntlm'),
      handler: async (input, output) => (await seamlessService()).serve('ntlm', input, output),
    },
  ],
  log,
);
log(`listening in ${runDir(stateDir)}; config ${values.config ?? '(default)'}`);

const signal = await new Promise<string>((resolve) => {
  process.once('SIGTERM', () => resolve('SIGTERM'));
  process.once('SIGINT', () => resolve('SIGINT'));
  // Under serve, stdin is a pipe from it: its end means serve is gone (even by SIGKILL, which leaves no time
  // to stop us), and a second authd started by the next serve must not find this one holding the sockets.
  if (values['exit-with-parent']) {
    process.stdin.once('end', () => resolve('parent gone'));
    process.stdin.once('error', () => resolve('parent gone'));
    process.stdin.resume();
  }
});
log(`${signal}: stopping (${listener.connections()} connections)`);
await listener.close(STOP_GRACE_MS);
session.close();
await Promise.all([directory?.then((d) => d.close()), seamless?.then((s) => s.close())]);
log('stopped');
// LDAP timers of requests cut off by an outage may linger for a whole timeout: leave now.
process.exit(0);
