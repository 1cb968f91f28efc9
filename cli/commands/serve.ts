import type { RequestListener } from 'node:http';
import type { PortalDecisionSettings } from '../../icap-server/decision.ts';
import { portalService, type PortalService } from '../../icap-server/portal-service.ts';
import { createIcapServer, type IcapServer } from '../../icap-server/server.ts';
import { systemClock } from '../../lib/clock.ts';
import { bufferedStderrLog } from '../../lib/log.ts';
import { DEFAULT_BUSY_TIMEOUT_MS } from '../../lib/store/database.ts';
import { testSettings } from '../../lib/directory/directory.ts';
import { directoryAdminFrom } from '../../portal/admin/directory-admin.ts';
import { createApp } from '../../portal/app.ts';
import { ensureProxyKey, ProxyKeyCheck, proxyKeyPath } from '../../lib/security/proxy-key.ts';
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
sign in with an account made by "doorman admin passwd"); with squid.intercept.httpPort set, also the captive
portal's ICAP service on icap.host:icap.port. Listens on the configured addresses first,
then (when started as root) runs as the service user, who owns the session DB. If that user cannot open the
DB (stateDir out of its reach, say), it keeps running, answers 503 with the reason (ICAP: 500), and opens the
DB on a later request once it can (at most one attempt a second). Stops on SIGTERM or SIGINT.

Options:
${CONFIG_HELP}`;

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the web app (login API, admin screens) and the ICAP service',
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
    // The ICAP service reads the DB through `current` below, which is set before any request can be read.
    const stores: { current?: () => Stores } = {};
    let icap: IcapServer | undefined;
    let icapWhere = '';
    const { icap: icapConfig } = loaded.config;
    if (loaded.config.squid.intercept.httpPort !== null) {
      icap = createIcapServer({
        ...portalFromStores(() => {
          if (stores.current === undefined) throw new Error('the session DB is not open yet');
          return stores.current();
        }, loaded.config.baseUrl),
        maxConnections: icapConfig.maxConnections,
        log: (line) => log(`icap: ${line}`),
      });
      try {
        const { address, port } = await icap.listen(icapConfig.port, icapConfig.host);
        icapWhere = `${address.includes(':') ? `[${address}]` : address}:${port}`;
      } catch (error) {
        await server.close();
        const where = icapConfig.host.includes(':') ? `[${icapConfig.host}]` : icapConfig.host;
        const why = error instanceof Error ? error.message : String(error);
        throw new Error(`cannot listen on ${where}:${icapConfig.port} (icap): ${why}`, { cause: error });
      }
    }
    // Giving up root is fatal if it fails; the DB not opening is not: serve stays up, answers 503 saying why,
    // and opens it on a later request once the operator has fixed it (see OpenOnDemand).
    dropPrivileges(loaded.config);
    // Waiting for another process's lock would hold every request: the web app never does (busy_timeout 0)
    // and retries on timers instead (lib/store/busy.ts). Only the first opening, at start-up before any request
    // is served, may wait for a migration; a later one (made while a request waits) fails at once and is tried
    // again on a later request.
    let attempts = 0;
    const open = (): { stores: Stores; proxyKey: ProxyKeyCheck } => {
      const stores = openStores(loaded, {
        busyTimeoutMs: 0,
        openBusyTimeoutMs: attempts++ === 0 ? DEFAULT_BUSY_TIMEOUT_MS : 0,
      });
      try {
        // The proxy key in stateDir, made on the first start (lib/security/proxy-key.ts).
        return { stores, proxyKey: new ProxyKeyCheck(ensureProxyKey(proxyKeyPath(loaded.config))) };
      } catch (error) {
        // Tried again on a later request: a handle left open here would be one more each time.
        stores.close();
        throw error;
      }
    };
    const portalApp = (stores: Stores, proxyKey: ProxyKeyCheck): RequestListener =>
      createApp({
        config: loaded.config,
        sessions: stores.sessions,
        commits: stores.commits,
        apiKeys: stores.apiKeys,
        proxyKey,
        clock: systemClock,
        log,
        admin: {
          store: stores.admins,
          directory: directoryAdminFrom(stores.directory, {
            test: (s, password) => testSettings(s, password, { log }),
          }),
        },
      }).callback();
    let opened: Stores | undefined;
    const portal = new OpenOnDemand(
      () => {
        const { stores: now, proxyKey } = open();
        opened = now;
        return { stores: now, app: portalApp(now, proxyKey) };
      },
      { clock: systemClock, log },
    );
    // For ICAP: while the DB cannot be opened, every decision (and the ISTag) throws, and the server answers
    // 500: with bypass=0, Squid then shows the client its error page, never the web.
    stores.current = () => {
      const state = portal.get();
      if (!state.ok) throw new Error(`the session DB cannot be opened: ${state.reason}`);
      return state.value.stores;
    };
    const unavailable = unavailableApp(() => {
      const state = portal.get();
      return state.ok ? 'it has been opened meanwhile' : state.reason;
    }, log).callback();
    portal.get();
    app.handle = (req, res) => {
      const state = portal.get();
      (state.ok ? state.value.app : unavailable)(req, res);
    };
    const where = server.addresses.map((a) =>
      a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`,
    );
    log(
      `listening on ${where.join(', ')}; base URL ${loaded.config.baseUrl}; config ${loaded.path ?? '(embedded default)'}`,
    );
    if (icap !== undefined) log(`icap service on ${icapWhere}`);
    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        log(`${signal}: stopping`);
        resolve();
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
    });
    await Promise.all([server.close(), icap?.close()]);
    opened?.close();
    log.flush();
    return EXIT.ok;
  },
};

/**
 * The captive portal's decision (icap-server/portal-service.ts) over the session DB. Per request it makes
 * one indexed read for each settings version (portal and directory) and reloads only what moved: the portal
 * settings, and the directory's hosts, which are part of the ISTag and so rebuild the service. Anything that
 * throws here (the DB not open, stored settings no longer valid) is answered 500 by the server.
 */
export function portalFromStores(current: () => Stores, baseUrl: string): PortalService {
  let settings: { version: number; value: PortalDecisionSettings } | undefined;
  let service: { version: number; value: PortalService } | undefined;
  const settingsNow = (): PortalDecisionSettings => {
    const store = current().portal;
    const version = store.version();
    if (settings?.version !== version) settings = { version, value: store.load() };
    return settings.value;
  };
  const serviceNow = (): PortalService => {
    const directory = current().directory;
    const version = directory.version();
    if (service?.version !== version) {
      const applied = version === 0 ? undefined : directory.load()?.settings;
      const directoryHosts =
        applied === undefined
          ? []
          : [applied.host, ...(applied.address === undefined ? [] : [applied.address])];
      service = {
        version,
        value: portalService({
          settings: settingsNow,
          settingsVersion: () => current().portal.version(),
          baseUrl,
          directoryHosts,
          isIdentified: (ip) => current().sessions.find({ kind: 'ip', value: ip }) !== undefined,
        }),
      };
    }
    return service.value;
  };
  return {
    decide: (request) => serviceNow().decide(request),
    istag: () => serviceNow().istag(),
  };
}
