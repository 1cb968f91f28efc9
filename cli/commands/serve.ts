import type { RequestListener } from 'node:http';
import { oncePerTurn } from '../../icap-server/once-per-turn.ts';
import { SessionCache } from '../../icap-server/session-cache.ts';
import { portalService, type PortalService } from '../../icap-server/portal-service.ts';
import { createIcapServer, type IcapServer } from '../../icap-server/server.ts';
import { type Clock, systemClock } from '../../lib/clock.ts';
import { leastIdleSeconds } from '../../lib/config/schema.ts';
import { findMac } from '../../lib/net/find-mac.ts';
import { MacLookupCache } from '../../lib/net/mac-lookup-cache.ts';
import type { MacLookup } from '../../lib/net/mac-lookup.ts';
import { addressBinding } from '../../lib/portal/address-binding.ts';
import type { PortalSettings } from '../../lib/portal/settings.ts';
import { bufferedStderrLog } from '../../lib/log.ts';
import { DEFAULT_BUSY_TIMEOUT_MS } from '../../lib/store/database.ts';
import { testSettings } from '../../lib/directory/directory.ts';
import { directoryAdminFrom } from '../../portal/admin/directory-admin.ts';
import { createApp } from '../../portal/app.ts';
import { directorySourceFrom } from '../../portal/splash/directory-source.ts';
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
        ...portalFromStores(
          () => {
            if (stores.current === undefined) throw new Error('the session DB is not open yet');
            return stores.current();
          },
          loaded.config.baseUrl,
          { log: (line) => log(`icap: ${line}`) },
        ),
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
    const open = (): { stores: Stores; proxyKey: ProxyKeyCheck; key: string } => {
      const stores = openStores(loaded, {
        busyTimeoutMs: 0,
        openBusyTimeoutMs: attempts++ === 0 ? DEFAULT_BUSY_TIMEOUT_MS : 0,
      });
      try {
        // The proxy key in stateDir, made on the first start (lib/security/proxy-key.ts).
        const key = ensureProxyKey(proxyKeyPath(loaded.config));
        return { stores, proxyKey: new ProxyKeyCheck(key), key };
      } catch (error) {
        // Tried again on a later request: a handle left open here would be one more each time.
        stores.close();
        throw error;
      }
    };
    // The splash pages' own MAC lookups share answers for a few seconds (a page's requests come in a burst).
    const splashMacs = new MacLookupCache({ clock: systemClock });
    const portalApp = (stores: Stores, proxyKey: ProxyKeyCheck, key: string): RequestListener =>
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
          portal: {
            settings: stores.portal,
            deviceGroups: stores.deviceGroups,
            sessions: stores.sessions,
            leastIdleMinutes: Math.max(1, Math.ceil(leastIdleSeconds(loaded.config) / 60)),
          },
        },
        splash: {
          settings: stores.portal,
          deviceGroups: stores.deviceGroups,
          directory: directorySourceFrom(stores.directory, { clock: systemClock, log }),
          findMac: (ip) => findMac(ip, { cache: splashMacs }),
          // Open sign-in pages stay good across a restart: the CSRF key is derived from the proxy key.
          csrfSecret: key,
        },
      }).callback();
    let opened: Stores | undefined;
    const portal = new OpenOnDemand(
      () => {
        const { stores: now, proxyKey, key } = open();
        opened = now;
        return { stores: now, app: portalApp(now, proxyKey, key) };
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

export interface PortalFromStoresOptions {
  /** Default the system clock: judges idle sessions. */
  clock?: Clock;
  /**
   * The MAC of the device at a (normalised) address, registration mode only. Default: lib/net/find-mac.ts
   * (the neighbour table, through `ip`), its answers shared for a few seconds (MacLookupCache).
   */
  findMac?: (ip: string) => Promise<MacLookup>;
  log?: (line: string) => void;
}

/**
 * The captive portal's decision (icap-server/portal-service.ts) over the session DB. Once per turn of the
 * event loop it reads the DB's change stamp, and only when that moved the two settings versions (portal and
 * directory), reloading only what moved: the portal settings, and the directory's hosts, which are part of
 * the ISTag and so rebuild the service. Anything that throws here (the DB not open, stored settings no longer
 * valid) is answered 500 by the server.
 *
 * Sessions are looked up through a cache dropped whenever the DB changes (icap-server/session-cache.ts), and
 * count only while they are not idle past their limit (live-session.ts). In registration mode an
 * unidentified client's MAC is looked up (only then: the other modes never start a process) and, when it
 * has a live registration, the client is let through; an IPv6 client's address is bound to the registration
 * first (lib/portal/address-binding.ts), because Squid never gives the session helper an IPv6 client's MAC.
 * An IPv4 client needs no binding: Squid's %>eui gives the helper its MAC.
 */
export function portalFromStores(
  current: () => Stores,
  baseUrl: string,
  options: PortalFromStoresOptions = {},
): PortalService {
  const clock = options.clock ?? systemClock;
  const log = options.log ?? (() => {});
  const cache = new MacLookupCache({ clock });
  const macOf = options.findMac ?? ((ip: string) => findMac(ip, { cache }));
  const sessions = new SessionCache(clock);
  let settings: { version: number; value: PortalSettings } | undefined;
  let service: { version: number; value: PortalService } | undefined;
  // What the DB holds is checked once per turn of the event loop, not per request: one statement, the DB's
  // change stamp, which moves whenever anything in the DB changes (a settings save, a sign-in, a "last seen"
  // from the session helper), in this process or another. Only then are the settings versions read again
  // (the answer's ISTag and the decision need them) and the session cache dropped. The requests answered in
  // one turn share one reading; a change is seen from the next turn on.
  let known: { stores: Stores; stamp: string; portal: number; directory: number } | undefined;
  const versions = oncePerTurn(() => {
    const stores = current();
    const stamp = stores.sessions.changeStamp();
    if (known?.stores !== stores || known.stamp !== stamp)
      known = { stores, stamp, portal: stores.portal.version(), directory: stores.directory.version() };
    return known;
  });
  const settingsNow = (): PortalSettings => {
    const version = versions().portal;
    if (settings?.version !== version) settings = { version, value: current().portal.load() };
    return settings.value;
  };
  const serviceNow = (): PortalService => {
    const version = versions().directory;
    if (service?.version !== version) {
      const directory = current().directory;
      const applied = version === 0 ? undefined : directory.load()?.settings;
      const directoryHosts =
        applied === undefined
          ? []
          : [applied.host, ...(applied.address === undefined ? [] : [applied.address])];
      service = {
        version,
        value: portalService({
          settings: settingsNow,
          settingsVersion: () => versions().portal,
          baseUrl,
          directoryHosts,
          isIdentified: (ip) => {
            const { stores, stamp } = versions();
            return sessions.identified(stores.sessions, stamp, ip);
          },
          isRegisteredDevice: async (ip) => {
            const found = await macOf(ip);
            if (!found.ok) return false;
            const stores = current();
            const registration = stores.sessions.find({ kind: 'mac', value: found.mac });
            if (registration?.source !== 'registration') return false;
            // Bound for IPv6 (Squid 5.7 never gives the helper an IPv6 client's MAC) and for IPv4 too: an IPv4
            // client reaches ICAP only when Squid had no MAC for it, and then the binding is what names it.
            try {
              stores.sessions.start(addressBinding(registration, ip, settingsNow()));
              sessions.forget(ip);
            } catch (error) {
              // The device is registered all the same; the next request tries the binding again.
              const why = error instanceof Error ? error.message : String(error);
              log(`cannot bind ${ip} to the registration of ${found.mac}: ${why}`);
            }
            return true;
          },
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
