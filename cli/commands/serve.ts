import type { RequestListener } from 'node:http';
import { resolve as resolvePath } from 'node:path';
import { portalFromStores } from '../../icap-server/portal-from-stores.ts';
import { createIcapServer, type IcapServer } from '../../icap-server/server.ts';
import {
  icapLimits,
  icapWorkerCount,
  startIcapWorkers,
  type IcapWorkers,
} from '../../icap-server/workers.ts';
import { systemClock } from '../../lib/clock.ts';
import { leastIdleSeconds } from '../../lib/config/schema.ts';
import { findMac } from '../../lib/net/find-mac.ts';
import { MacLookupCache } from '../../lib/net/mac-lookup-cache.ts';
import { bufferedStderrLog } from '../../lib/log.ts';
import { DEFAULT_BUSY_TIMEOUT_MS } from '../../lib/store/database.ts';
import type { Store } from '../../lib/store/store.ts';
import { testSettings } from '../../lib/directory/directory.ts';
import { directoryAdminFrom } from '../../portal/admin/directory-admin.ts';
import { createApp } from '../../portal/app.ts';
import { explain } from '../../lib/explain/explain.ts';
import { gatherFacts, localSeamlessRealm } from '../explain-gather.ts';
import { directorySourceFrom } from '../../portal/splash/directory-source.ts';
import { ensureProxyKey, ProxyKeyCheck, proxyKeyPath } from '../../lib/security/proxy-key.ts';
import { PasswordGuesses } from '../../lib/security/password-guesses.ts';
import { PortalUrlSigner } from '../../lib/security/portal-url-signature.ts';
import { startServer } from '../../portal/server.ts';
import { OpenOnDemand } from '../../lib/open-on-demand.ts';
import { unavailableApp } from '../../portal/unavailable.ts';
import { dropPrivileges } from '../../lib/system/service-user.ts';
import { superviseAuthd } from '../../helpers/authd/supervisor.ts';
import { probeAuthd } from '../../helpers/authd/probe.ts';
import { helperSocket } from '../../lib/seamless/paths.ts';
import type { HomeProbes } from '../../portal/admin/home-checks.ts';
import { hostPort, startMetrics, type ServeMetrics } from '../serve-metrics.ts';
import { resumeAtStart, startPrivilegedSeamless } from '../../lib/seamless/privileged.ts';
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

const help = `Usage: doorman serve [--no-authd]

Run the web app: the login API ({baseUrl}api/login/, api/logout/) and the admin screens ({baseUrl}admin/,
sign in with an account made by "doorman admin passwd"); with squid.intercept.httpPort set, also the captive
portal's ICAP service on icap.host:icap.port. Listens on the configured addresses first,
then (when started as root) runs as the service user, who owns the session DB. If that user cannot open the
DB (stateDir out of its reach, say), it keeps running, answers 503 with the reason (ICAP: 500), and opens the
DB on a later request once it can (at most one attempt a second). Stops on SIGTERM or SIGINT.

Squid's helpers (dist/bin/doorman-shim) are answered by doorman-authd, a process of its own (see "doorman
authd --help"). Unless --no-authd, serve uses the authd answering on <stateDir>/run, or starts one as the
service user, in a session of its own: it outlives serve (even kill -9), and the next serve uses it. serve
checks it every second (a session lookup answered within 5 s): one that died is started again, one that is
alive but does not answer is killed (SIGKILL) and replaced. Stopping serve leaves authd running: "doorman
authd stop" stops it.

Options:
      --no-authd      authd is run by the service manager (systemd/doorman-authd.service): neither start
                      nor check it
${CONFIG_HELP}`;

export const serveCommand: Command = {
  name: 'serve',
  summary: 'run the web app (login API, admin screens) and the ICAP service',
  help,
  async run(argv) {
    const { values, positionals } = parse({
      args: argv,
      options: { ...CONFIG_OPTION, 'no-authd': { type: 'boolean', default: false } },
      allowPositionals: true,
    });
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
    // The whole box's metrics (docs/metrics.md): counted from now on; their own listener bound below, as root.
    let metrics: ServeMetrics | undefined;
    /** The store serve has open, for the metrics read at a scrape (set once the opener exists). */
    let storeNow: () => Store | undefined = () => undefined;
    // The ICAP service reads the DB through `current` below, which is set before any request can be read.
    const stores: {
      current?: () => { stores: Store; portalUrls: PortalUrlSigner; proxyKey: ProxyKeyCheck };
    } = {};
    const openNow = () => {
      if (stores.current === undefined) throw new Error('the session DB is not open yet');
      return stores.current();
    };
    let icap: IcapServer | undefined;
    let icapWorkers: IcapWorkers | undefined;
    let icapWhere = '';
    const { icap: icapConfig } = loaded.config;
    const workers = icapWorkerCount(icapConfig.workers);
    const icapFailed = async (error: unknown): Promise<never> => {
      await server.close();
      const why = error instanceof Error ? error.message : String(error);
      throw new Error(`cannot listen on ${hostPort(icapConfig.host, icapConfig.port)} (icap): ${why}`, {
        cause: error,
      });
    };
    if (loaded.config.squid.intercept.httpPort !== null && workers > 0) {
      // Worker threads, each listening on the port (icap-server/workers.ts); they open the DB once told to.
      try {
        icapWorkers = await startIcapWorkers({
          count: workers,
          host: icapConfig.host,
          port: icapConfig.port,
          config: loaded.config,
          log,
        });
      } catch (error) {
        await icapFailed(error);
      }
      const threads = icapWorkers?.count ?? 0;
      icapWhere = `${hostPort(icapConfig.host, icapConfig.port)} (${threads} thread${threads === 1 ? '' : 's'})`;
    } else if (loaded.config.squid.intercept.httpPort !== null) {
      const icapLog = (line: string) => log(`icap: ${line}`);
      icap = createIcapServer({
        ...portalFromStores(() => openNow().stores, loaded.config.baseUrl, {
          log: icapLog,
          portalUrls: () => openNow().portalUrls,
          proxyKey: () => openNow().proxyKey,
        }),
        ...icapLimits(icapConfig),
        log: icapLog,
      });
      try {
        const { address, port } = await icap.listen(icapConfig.port, icapConfig.host);
        icapWhere = hostPort(address, port);
      } catch (error) {
        await icapFailed(error);
      }
    }
    try {
      metrics = await startMetrics(loaded.config, {
        log,
        icapThreads: () => icapWorkers?.metrics() ?? Promise.resolve([]),
        store: () => storeNow(),
      });
    } catch (error) {
      await Promise.all([server.close(), icap?.close(), icapWorkers?.close()]);
      throw error;
    }
    // Giving up root is fatal if it fails; the DB not opening is not: serve stays up, answers 503 saying why,
    // and opens it on a later request once the operator has fixed it (see OpenOnDemand).
    // The admin screen's join, winbindd and keytab work need root: a child forked now keeps it (privileged.ts).
    const configFile = loaded.path === undefined ? undefined : resolvePath(loaded.path);
    const privileged =
      process.getuid?.() === 0
        ? startPrivilegedSeamless(loaded.config, {
            ...(configFile === undefined ? {} : { configFile }),
            log,
          })
        : undefined;
    // After a reboot the member's winbindd is gone until started again (NTLM needs it): once, never awaited.
    if (privileged !== undefined) void resumeAtStart(privileged.control, log);
    dropPrivileges(loaded.config);
    // Every helper Squid runs is a shim relaying to authd (helpers/authd/main.ts): the one running, or one
    // started now as the helper user, which outlives this process (helpers/authd/supervisor.ts).
    const authd = values['no-authd'] ? undefined : superviseAuthd({ config: loaded.config, configFile, log });
    // Waiting for another process's lock would hold every request: the web app never does (busy_timeout 0)
    // and retries on timers instead (lib/store/busy.ts). Only the first opening, at start-up before any request
    // is served, may wait for a migration; a later one (made while a request waits) fails at once and is tried
    // again on a later request.
    let attempts = 0;
    const open = async (): Promise<{
      stores: Stores;
      proxyKey: ProxyKeyCheck;
      key: string;
      portalUrls: PortalUrlSigner;
    }> => {
      const stores = await openStores(loaded, {
        applicationName: 'doorman-serve',
        log,
        busyTimeoutMs: 0,
        openBusyTimeoutMs: attempts++ === 0 ? DEFAULT_BUSY_TIMEOUT_MS : 0,
      });
      try {
        // The proxy key in stateDir, made on the first start (lib/security/proxy-key.ts).
        const key = ensureProxyKey(proxyKeyPath(loaded.config));
        // The ICAP decision signs the original URL with it, the splash page checks it (issue 13).
        const portalUrls = new PortalUrlSigner(key, systemClock);
        return { stores, proxyKey: new ProxyKeyCheck(key), key, portalUrls };
      } catch (error) {
        // Tried again on a later request: a handle left open here would be one more each time.
        void stores.close();
        throw error;
      }
    };
    // The splash pages' own MAC lookups share answers for a few seconds (a page's requests come in a burst).
    const splashMacs = new MacLookupCache({ clock: systemClock });
    // The splash page's directory, closed on shutdown: its pooled connections would keep serve running.
    let splashDirectory: ReturnType<typeof directorySourceFrom> | undefined;
    const portalApp = (
      stores: Stores,
      proxyKey: ProxyKeyCheck,
      key: string,
      portalUrls: PortalUrlSigner,
      directory: ReturnType<typeof directorySourceFrom>,
    ): RequestListener => {
      const { store } = stores;
      return createApp({
        config: loaded.config,
        sessions: store.sessions,
        apiKeys: store.apiKeys,
        proxyKey,
        clock: systemClock,
        log,
        audit: store.audit,
        admin: {
          store: store.admins,
          sessions: store.sessions,
          apiKeys: store.apiKeys,
          probes: homeProbes(store, loaded.config.stateDir, log),
          audit: store.audit,
          ...(privileged === undefined ? {} : { seamless: privileged.control }),
          explain: async (input) =>
            explain(
              await gatherFacts(input, {
                config: loaded.config,
                store,
                clock: systemClock,
                log,
                // The web app never waits for another process's lock (busy_timeout 0): locked, step 7 says so.
                seamlessRealm: () => localSeamlessRealm(loaded.config, systemClock, 0),
              }),
            ),
          directory: directoryAdminFrom(store.directory, {
            test: (s, password) => testSettings(s, password, { log }),
          }),
          portal: {
            settings: store.portal,
            deviceGroups: store.deviceGroups,
            sessions: store.sessions,
            leastIdleMinutes: Math.max(1, Math.ceil(leastIdleSeconds(loaded.config) / 60)),
          },
        },
        splash: {
          settings: store.portal,
          deviceGroups: store.deviceGroups,
          directory,
          findMac: (ip) => findMac(ip, { cache: splashMacs }),
          // Open sign-in pages stay good across a restart: the CSRF key is derived from the proxy key.
          csrfSecret: key,
          guesses: new PasswordGuesses(stores.signInFailures, loaded.config.passwordGuessing, {
            clock: systemClock,
          }),
          portalUrls,
        },
      }).callback();
    };
    let opened: Stores | undefined;
    const portal = new OpenOnDemand(
      async () => {
        const { stores: now, proxyKey, key, portalUrls } = await open();
        opened = now;
        splashDirectory = directorySourceFrom(now.store.directory, { clock: systemClock, log });
        const app = portalApp(now, proxyKey, key, portalUrls, splashDirectory);
        return { stores: now.store, portalUrls, proxyKey, app };
      },
      { clock: systemClock, log },
    );
    storeNow = () => {
      const state = portal.get();
      return state.ok ? state.value.stores : undefined;
    };
    // For ICAP: while the DB cannot be opened, every decision (and the ISTag) throws, and the server answers
    // 500: with bypass=0, Squid then shows the client its error page, never the web.
    stores.current = () => {
      const state = portal.get();
      if (!state.ok) throw new Error(`the session DB cannot be opened: ${state.reason}`);
      return state.value;
    };
    const unavailable = unavailableApp(() => {
      const state = portal.get();
      return state.ok ? 'it has been opened meanwhile' : state.reason;
    }, log).callback();
    // Serving starts once the first opening has ended (a PostgreSQL store has connected and loaded by then).
    await portal.settled();
    // Root is given up: the ICAP threads may open the DB now.
    icapWorkers?.open();
    app.handle = (req, res) => {
      if (metrics?.onWebApp(req, res) === true) return;
      const state = portal.get();
      (state.ok ? state.value.app : unavailable)(req, res);
    };
    const where = server.addresses.map((a) => hostPort(a.host, a.port));
    log(
      `listening on ${where.join(', ')}; base URL ${loaded.config.baseUrl}; config ${loaded.path ?? '(embedded default)'}`,
    );
    if (icapWhere !== '') log(`icap service on ${icapWhere}`);
    if (metrics?.where !== undefined) log(`metrics on ${metrics.where}`);
    // Sessions past their hard end are answered as ended already; their rows (and on PostgreSQL the record of
    // deletions every box's copy catches up by) are removed hourly, with those idle past their limit, each
    // expiry recorded in the audit trail by the box that removed it. Several boxes doing it is harmless. Audit
    // events older than audit.retentionDays go too.
    const retentionMs = loaded.config.audit.retentionDays * 86_400_000;
    const purge = setInterval(() => {
      const state = portal.get();
      if (!state.ok) return;
      state.value.stores.sessions.purgeExpired().then(
        (purged) => purged > 0 && log(`purged ${purged} ended sessions`),
        (error: unknown) => log(`purging ended sessions failed, tried again in an hour: ${String(error)}`),
      );
      state.value.stores.audit.purge(systemClock.now() - retentionMs).then(
        (purged) =>
          purged > 0 &&
          log(`purged ${purged} audit events older than ${loaded.config.audit.retentionDays} days`),
        (error: unknown) => log(`purging old audit events failed, tried again in an hour: ${String(error)}`),
      );
    }, PURGE_EVERY_MS);
    purge.unref();
    await new Promise<void>((resolve) => {
      const stop = (signal: string) => {
        log(`${signal}: stopping`);
        resolve();
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
    });
    clearInterval(purge);
    await Promise.all([
      server.close(),
      metrics?.close(),
      icap?.close(),
      icapWorkers?.close(),
      authd?.stop(),
      privileged?.close(),
      splashDirectory?.close(),
    ]);
    await opened?.close();
    log.flush();
    return EXIT.ok;
  },
};

/** How often serve removes sessions past their hard end. */
const PURGE_EVERY_MS = 3_600_000;

/**
 * What the admin Home screen asks outside serve's own process: a bind and group count with the applied
 * directory settings, one lookup over authd's socket, the store's status. The screen bounds each by its
 * deadline (an abandoned directory test ends at its own timeouts).
 */
/** How much sooner than the Home screen's deadline the authd probe gives up (see homeProbes). */
const AUTHD_PROBE_MARGIN_MS = 250;

function homeProbes(store: Store, stateDir: string, log: (line: string) => void): HomeProbes {
  const deadlineMs = 2000;
  return {
    deadlineMs,
    directory: async () => {
      const applied = store.directory.load();
      if (applied === undefined) throw new Error('no directory is applied');
      const tested = await testSettings(applied.settings, applied.password, { log });
      if (!tested.ok) throw new Error(tested.error.message);
      return { groupCount: tested.groupCount };
    },
    // Its own deadline a little inside the Home screen's: authd silent that long is a failure ("not
    // answering"), told the same way every time, never the race of two equal timers that could also say
    // "unknown (timed out)".
    authd: async () => {
      const probed = await probeAuthd(helperSocket(stateDir, 'session'), deadlineMs - AUTHD_PROBE_MARGIN_MS);
      if (!probed.ok) return { ok: false, detail: probed.detail };
      return {
        ok: true,
        ms: probed.ms,
        ...(probed.lastLookup === undefined ? {} : { lastLookup: probed.lastLookup }),
      };
    },
    store: () => store.status(),
  };
}
