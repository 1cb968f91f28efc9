import type { RequestListener } from 'node:http';
import { systemClock } from '../../lib/clock.ts';
import { bufferedStderrLog } from '../../lib/log.ts';
import { DEFAULT_BUSY_TIMEOUT_MS } from '../../lib/store/database.ts';
import { testSettings } from '../../lib/directory/directory.ts';
import { directoryAdminFrom } from '../../portal/admin/directory-admin.ts';
import { createApp } from '../../portal/app.ts';
import { startServer } from '../../portal/server.ts';
import { OpenOnDemand, unavailableApp } from '../../portal/unavailable.ts';
import { dropPrivileges } from '../../lib/system/service-user.ts';
import {
  type Command,
  CONFIG_HELP,
  CONFIG_OPTION,
  configFrom,
  EXIT,
  noExtra,
  openStores,
  out,
  parse,
  type Stores,
} from '../command.ts';

const help = `Usage: doorman serve

Run the web app: the login API ({baseUrl}api/login/, api/logout/) and the admin screens ({baseUrl}admin/,
sign in with an account made by "doorman admin passwd"). Listens on the configured addresses first,
then (when started as root) runs as the service user, who owns the session DB. If that user cannot open the
DB (stateDir out of its reach, say), it keeps running, answers 503 with the reason, and opens the DB on a later
request once it can (at most one attempt a second). Stops on SIGTERM or SIGINT.

Options:
${CONFIG_HELP}`;

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the web app (login API, admin screens)',
  help,
  async run(argv) {
    const { values, positionals } = parse({ args: argv, options: CONFIG_OPTION, allowPositionals: true });
    if (values.help) return (out(help), EXIT.ok);
    noExtra(positionals);
    const loaded = configFrom(values.config);
    const log = bufferedStderrLog('doorman');
    // Bind first (ports below 1024 need root), then give up root before the DB is opened or a request read.
    // A request that arrives on the first address while the others are still being bound gets a 503.
    const app: { handle?: RequestListener } = {};
    const late = {
      callback: (): RequestListener => (req, res) => {
        if (app.handle) app.handle(req, res);
        else res.writeHead(503, { 'retry-after': '1', 'cache-control': 'no-store' }).end();
      },
    };
    const server = await startServer(late, loaded.config.listen, {
      maxConnections: loaded.config.server.maxConnections,
      maxConnectionsPerAddress: loaded.config.server.maxConnectionsPerAddress,
      unlimitedAddresses: loaded.config.trustedProxies,
    });
    // Giving up root is fatal if it fails; the DB not opening is not: serve stays up, answers 503 saying why,
    // and opens it on a later request once the operator has fixed it (see OpenOnDemand).
    dropPrivileges(loaded.config);
    // Waiting for another process's lock would hold every request: the web app never does (busy_timeout 0)
    // and retries on timers instead (lib/store/busy.ts). Only the first opening, at start-up before any request
    // is served, may wait for a migration; a later one (made while a request waits) fails at once and is tried
    // again on a later request.
    let attempts = 0;
    const open = () =>
      openStores(loaded, {
        busyTimeoutMs: 0,
        openBusyTimeoutMs: attempts++ === 0 ? DEFAULT_BUSY_TIMEOUT_MS : 0,
      });
    const portalApp = (stores: Stores): RequestListener =>
      createApp({
        config: loaded.config,
        sessions: stores.sessions,
        commits: stores.commits,
        apiKeys: stores.apiKeys,
        proxyKey: stores.proxyKey,
        clock: systemClock,
        log,
        admin: {
          store: stores.admins,
          directory: directoryAdminFrom(stores.directory, {
            test: (s, password) => testSettings(s, password, { log }),
          }),
        },
      }).callback();
    let stores: Stores | undefined;
    const portal = new OpenOnDemand(
      () => {
        stores = open();
        return portalApp(stores);
      },
      { clock: systemClock, log },
    );
    const unavailable = unavailableApp(() => {
      const state = portal.get();
      return state.ok ? 'it has been opened meanwhile' : state.reason;
    }, log).callback();
    portal.get();
    app.handle = (req, res) => {
      const state = portal.get();
      (state.ok ? state.value : unavailable)(req, res);
    };
    const where = server.addresses.map((a) =>
      a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`,
    );
    log(
      `listening on ${where.join(', ')}; base URL ${loaded.config.baseUrl}; config ${loaded.path ?? '(embedded default)'}`,
    );
    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        log(`${signal}: stopping`);
        resolve();
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
    });
    await server.close();
    stores?.close();
    log.flush();
    return EXIT.ok;
  },
};
