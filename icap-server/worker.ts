import { parentPort, workerData } from 'node:worker_threads';
import { systemClock } from '../lib/clock.ts';
import { dbPath } from '../lib/config/load.ts';
import { openDatabase } from '../lib/store/database.ts';
import { openStore } from '../lib/store/open-store.ts';
import { PortalUrlSigner } from '../lib/security/portal-url-signature.ts';
import { ProxyKeyCheck, proxyKeyPath, readProxyKey } from '../lib/security/proxy-key.ts';
import { checkStateDir } from '../lib/system/service-user.ts';
import { OpenOnDemand } from '../lib/open-on-demand.ts';
import { portalFromStores, type PortalStores } from './portal-from-stores.ts';
import { createIcapServer } from './server.ts';
import { sharedSlots } from './slots.ts';
import { icapLimits, type FromWorker, type IcapWorkerData, type ToWorker } from './workers.ts';
import { icapMetrics } from '../lib/metrics/icap.ts';
import { processRegistry } from '../lib/metrics/registry.ts';

/**
 * One ICAP worker thread (see workers.ts): its own listener on the shared port, its own store (on its own
 * connection to the session DB), the decision of portal-from-stores.ts. Its log lines go to serve's thread, which writes them.
 */
const port = parentPort;
if (port === null) throw new Error('icap-server/worker.ts runs as a worker thread (see workers.ts)');
const data = workerData as IcapWorkerData;
const { config } = data;
const post = (message: FromWorker) => port.postMessage(message);
const log = (line: string) => post({ kind: 'log', line: `icap: ${line}` });
// The thread's own counts (its answers), sent to serve's thread at each scrape; its memory is serve's process's.
const registry = processRegistry('icap', { defaults: false });
icapMetrics();

type OpenStores = PortalStores & {
  portalUrls: PortalUrlSigner;
  proxyKey: ProxyKeyCheck;
  close(): Promise<void>;
};
/**
 * The store as serve's own thread opens it (SQLite with busy_timeout 0: a lock held elsewhere fails a statement
 * at once, and the stores retry on timers), tried again at most once a second while it fails; meanwhile a
 * decision throws and is answered 500. Opened only once serve's thread has given up root (its files stay the
 * service user's).
 */
const stores = new OpenOnDemand(open, {
  clock: systemClock,
  log,
  messages: {
    failed: (reason) => `the session DB cannot be opened: ${reason}`,
    opened: 'session DB opened: serving again',
  },
});
let mayOpen = false;

function current(): OpenStores {
  if (!mayOpen) throw new Error('the session DB is not open yet');
  const state = stores.get();
  if (state.ok) return state.value;
  throw new Error(`the session DB cannot be opened: ${state.reason}`);
}

async function open(): Promise<OpenStores> {
  checkStateDir(config);
  // The key serve's thread made (or found) before it told the threads to open: the splash page's, too.
  const key = readProxyKey(proxyKeyPath(config));
  const db = openDatabase(dbPath(config), { busyTimeoutMs: 0, openBusyTimeoutMs: 0 });
  try {
    const store = await openStore(config, db, { applicationName: 'doorman-serve-icap', log });
    return {
      portalUrls: new PortalUrlSigner(key, systemClock),
      proxyKey: new ProxyKeyCheck(key),
      sessions: store.sessions,
      directory: store.directory,
      portal: store.portal,
      close: () => store.close(),
    };
  } catch (error) {
    db.close();
    throw error;
  }
}

/** Until serve's thread says the DB may be opened, connections wait unread (ICAP's 500 would be a lie). */
let letOpen: () => void = () => {};
const ready = new Promise<void>((resolve) => (letOpen = resolve));

const limits = icapLimits(config.icap);
const icap = createIcapServer({
  ...portalFromStores(current, config.baseUrl, {
    log,
    portalUrls: () => current().portalUrls,
    proxyKey: () => current().proxyKey,
  }),
  ready,
  ...limits,
  slots: sharedSlots(new Int32Array(data.counter), limits.maxConnections, limits.maxConnectionsPerAddress),
  log,
});

port.on('message', (message: ToWorker) => {
  if (message.kind === 'open') {
    mayOpen = true;
    // Logged if it fails; tried again on a request.
    void stores.settled().then(letOpen);
  } else if (message.kind === 'metrics') {
    void registry.getMetricsAsJSON().then((metrics) => post({ kind: 'metrics', id: message.id, metrics }));
  } else {
    void icap
      .close()
      .then(() => {
        const state = stores.get();
        return state.ok ? state.value.close() : undefined;
      })
      .finally(() => port.close());
  }
});

icap.listen(data.port, data.host, { reusePort: data.reusePort }).then(
  () => post({ kind: 'listening' }),
  (error: NodeJS.ErrnoException) => {
    post({ kind: 'listen-failed', message: error.message, code: error.code });
    port.close();
  },
);
