import { createServer } from 'node:net';
import { Worker } from 'node:worker_threads';
import type { Config } from '../lib/config/schema.ts';
import { defaultPerAddress } from './server.ts';
import { slotCounter } from './slots.ts';
import type { MetricsJson } from '../lib/metrics/gather.ts';

/**
 * The ICAP service on its own threads: `count` worker threads (worker.ts), each with its own listening
 * socket on the same host:port (`reusePort`, Linux SO_REUSEPORT: the kernel spreads new connections over
 * them), its own read connection to the session DB and the same decision code (portal-from-stores.ts). One
 * Node thread tops out well below what two cores answer; a connection stays on the thread that accepted it.
 *
 * Everything a decision depends on is in the DB, whose change stamp every thread reads once per turn of its
 * event loop, so the threads agree on the settings and the ISTag (made from the settings' version) within a
 * turn. The connection limits hold for all threads together: they count connections in one shared Int32Array
 * (slots.ts).
 *
 * Start-up: the port is first bound once without reusePort and let go, so a port held by anything (another
 * `doorman serve` too, whose sockets would otherwise share it silently) fails as before, with EADDRINUSE.
 * The threads listen before serve gives up root (a port below 1024), and open the DB only once `open()` says
 * root has been given up (until then, and while the DB cannot be opened, they answer 500). A platform without
 * SO_REUSEPORT gets one thread, and the log says so.
 */
export interface IcapWorkersOptions {
  count: number;
  host: string;
  port: number;
  config: Config;
  /** One line per event; the threads' own lines come through here too. */
  log: (line: string) => void;
}

export interface IcapWorkers {
  /** Threads listening. */
  readonly count: number;
  /** The DB may be opened now (root given up). */
  open(): void;
  /** Each listening thread's metrics (its ICAP answers); a thread that does not answer in time is left out. */
  metrics(): Promise<MetricsJson[]>;
  /** Each thread closes as createIcapServer's close() does; resolves once all have ended. */
  close(): Promise<void>;
}

/** The data each thread starts with (structured-cloned). */
export interface IcapWorkerData {
  host: string;
  port: number;
  reusePort: boolean;
  /** slotCounter()'s buffer: connections open in all threads, in all and per address. */
  counter: SharedArrayBuffer;
  config: Config;
}

export type ToWorker = { kind: 'open' } | { kind: 'close' } | { kind: 'metrics'; id: number };
export type FromWorker =
  | { kind: 'listening' }
  | { kind: 'metrics'; id: number; metrics: MetricsJson }
  | { kind: 'listen-failed'; message: string; code: string | undefined }
  | { kind: 'log'; line: string };

/**
 * icap.workers, or the default 0: serve's own thread. Measured on two cores (bench/README.md §5), serve's own
 * thread answered more at 8 connections than one or two threads did (each thread wakes for fewer requests,
 * and they compete with Squid and the client for the cores), and each thread costs about 37 MB. Threads pay
 * off where cores are spare, or where bursts of splash sign-ins (about 1 ms of CPU each, on serve's event
 * loop) must not delay ICAP answers: set icap.workers then.
 */
export function icapWorkerCount(configured: number | undefined): number {
  return configured ?? 0;
}

/** The ICAP server's limits from config `icap`, the same in serve's thread and in worker threads. */
export function icapLimits(icap: Config['icap']): {
  maxConnections: number;
  maxConnectionsPerAddress: number;
  requestTimeoutMs: number;
} {
  return {
    maxConnections: icap.maxConnections,
    maxConnectionsPerAddress: icap.maxConnectionsPerAddress ?? defaultPerAddress(icap.maxConnections),
    requestTimeoutMs: icap.requestTimeoutSeconds * 1000,
  };
}

/** How long a scrape waits for a thread's metrics. */
const METRICS_WAIT_MS = 1000;

/** Errors that say the address is the problem (not SO_REUSEPORT): the same without it. */
const ADDRESS_ERRORS = new Set(['EADDRINUSE', 'EACCES', 'EADDRNOTAVAIL', 'EPERM']);

export async function startIcapWorkers(options: IcapWorkersOptions): Promise<IcapWorkers> {
  await probe(options.host, options.port);
  const counter = slotCounter().buffer as SharedArrayBuffer;
  let reusePort = options.count > 1;
  let count = options.count;
  const started: Thread[] = [];
  const spawn = () => {
    const thread = new Thread(
      {
        host: options.host,
        port: options.port,
        reusePort,
        counter,
        config: options.config,
      },
      options.log,
    );
    started.push(thread);
    return thread.listening;
  };
  try {
    const first = await spawn();
    if (first !== undefined && reusePort && !ADDRESS_ERRORS.has(first.code ?? '')) {
      options.log(`reusePort unavailable (${first.message}): one ICAP listener thread`);
      reusePort = false;
      count = 1;
      const again = await spawn();
      if (again !== undefined) throw listenError(again);
    } else if (first !== undefined) throw listenError(first);
    const failed = (await Promise.all(Array.from({ length: count - 1 }, spawn))).find((f) => f !== undefined);
    if (failed !== undefined) throw listenError(failed);
  } catch (error) {
    await Promise.all(started.map((thread) => thread.close()));
    throw error;
  }
  const threads = started.filter((thread) => thread.isListening);
  return {
    count: threads.length,
    open: () => threads.forEach((thread) => thread.send({ kind: 'open' })),
    metrics: async () =>
      (await Promise.all(threads.map((thread) => thread.metrics()))).filter((m) => m !== undefined),
    close: async () => void (await Promise.all(threads.map((thread) => thread.close()))),
  };
}

/** Bind host:port alone and let it go: fails if anything holds it. */
function probe(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve()));
  });
}

function listenError(failed: { message: string; code: string | undefined }): Error {
  return Object.assign(new Error(failed.message), { code: failed.code });
}

/** One worker thread, seen from serve's thread. */
class Thread {
  readonly #worker: Worker;
  readonly listening: Promise<{ message: string; code: string | undefined } | undefined>;
  isListening = false;
  #closing = false;
  #exited: Promise<void>;
  readonly #asked = new Map<number, (metrics: MetricsJson | undefined) => void>();
  #nextId = 0;

  constructor(data: IcapWorkerData, log: (line: string) => void) {
    this.#worker = new Worker(new URL('./worker.ts', import.meta.url), { workerData: data });
    const id = this.#worker.threadId;
    this.#exited = new Promise((resolve) => this.#worker.once('exit', () => resolve()));
    this.listening = new Promise((resolve) => {
      this.#worker.on('message', (message: FromWorker) => {
        if (message.kind === 'log') log(message.line);
        else if (message.kind === 'metrics') this.#asked.get(message.id)?.(message.metrics);
        else if (message.kind === 'listening') {
          this.isListening = true;
          resolve(undefined);
        } else resolve({ message: message.message, code: message.code });
      });
      this.#worker.once('error', (error) => {
        log(`ICAP thread failed: ${error.stack ?? error.message}`);
        resolve({ message: error.message, code: undefined });
      });
      this.#worker.once('exit', (code) => {
        // Not restarted: the other threads go on listening (with none left, Squid's bypass=0 shows errors).
        if (this.isListening && !this.#closing) log(`ICAP thread ${id} ended (exit code ${code})`);
        this.isListening = false;
        resolve({ message: `the ICAP thread ended (exit code ${code})`, code: undefined });
      });
    });
  }

  send(message: ToWorker): void {
    this.#worker.postMessage(message);
  }

  /** The thread's metrics, or undefined if it has not answered within a second (busy, or ending). */
  metrics(): Promise<MetricsJson | undefined> {
    const id = this.#nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => answer(undefined), METRICS_WAIT_MS);
      const answer = (metrics: MetricsJson | undefined) => {
        clearTimeout(timer);
        this.#asked.delete(id);
        resolve(metrics);
      };
      this.#asked.set(id, answer);
      this.send({ kind: 'metrics', id });
    });
  }

  close(): Promise<void> {
    this.#closing = true;
    this.send({ kind: 'close' });
    return this.#exited;
  }
}
