import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { systemClock, type Clock } from '../lib/clock.ts';
import { Connection, type Decision, type Shared } from './connection.ts';
import type { IcapRequest, ParserLimits, ReqmodRequest } from './parser.ts';
import { Refusals } from './refusals.ts';
import { errorResponse } from './serializer.ts';
import { sharedSlots, slotCounter, type ConnectionSlots } from './slots.ts';
import { systemTimers, type Timers } from './timers.ts';

export type { Decision } from './connection.ts';

/**
 * The socket shell around the pure parser and serializer (one connection: connection.ts): who may connect
 * (slots.ts), what a refused connection gets (refusals.ts), start-up and shutdown.
 *
 * What this service decides is injected (`decide`), so the captive portal's logic plugs in without this file
 * knowing it; so is the ISTag (`istag`), which must change whenever a setting that changes answers does:
 * Squid re-reads OPTIONS and drops what it cached when the ISTag it sees changes.
 */
export interface IcapServerOptions {
  /** What to do with one REQMOD. May be async; a throw or rejection is answered 500 (ours, not the client's). */
  decide: (request: ReqmodRequest) => Decision | Promise<Decision>;
  /** The current ISTag, unquoted, at most 32 characters. Called for every response. */
  istag: () => string;
  /** The service's path in icap://host:port/PATH. Other paths get 404. */
  servicePath?: string;
  /** The OPTIONS Service header. */
  serviceName?: string;
  /** Connections open at once in all; one more is answered 503 and closed. */
  maxConnections?: number;
  /**
   * Connections open at once from one client address (IPv6: one /64); one more is answered 503 and closed.
   * This, not maxConnections, is advertised as Max-Connections: Squid (one address, its workers dividing the
   * figure among them) then never opens more than it may, and the places beyond it are out of one other
   * address's reach. Default: half of maxConnections (at least 1).
   */
  maxConnectionsPerAddress?: number;
  /** Seconds a client may keep the OPTIONS answer. */
  optionsTtl?: number;
  /**
   * Whether a request proves that its connection is the trusted client's (the portal: Squid's key, see
   * portal-service.ts). A proven connection gives back its place among its address's (slots.ts) and may idle
   * for idleTimeoutMs; any other is closed after unprovenIdleTimeoutMs without a message in progress, before
   * its first one too: Squid and every local user share 127.0.0.1, and a socket that only waits must not hold
   * one of Squid's places for long. Default: none proves.
   */
  proves?: (request: IcapRequest) => boolean;
  /**
   * A proven connection with no message in progress is closed after this long (longer than Squid's
   * pconn_timeout, so that Squid, keeping its connections open between transactions, closes first).
   */
  idleTimeoutMs?: number;
  /**
   * How long a connection not proven (see proves) may go without a message in progress, from its start and
   * between messages; then it is closed quietly. As short as the header deadline: a client sends its request
   * at once.
   */
  unprovenIdleTimeoutMs?: number;
  /** From a message's first byte until its heads are complete, however slowly they trickle in; then 408. */
  headerTimeoutMs?: number;
  /** From a message's first byte until all of it (heads and body) is in, however slowly it trickles; then 408. */
  requestTimeoutMs?: number;
  /** Longest wait for `decide`; then 500. */
  decisionTimeoutMs?: number;
  /** How long a refused connection lingers after its 503 (while few do; see refusals.ts). */
  refusedLingerMs?: number;
  /** Refused connections lingering at once; beyond them one is closed right after its 503. */
  maxLingeringRefused?: number;
  limits?: Partial<ParserLimits>;
  /**
   * Connections counted together with other servers (worker threads listening on one port, see workers.ts),
   * so the limits hold for all of them. Default: this server's own count.
   */
  slots?: ConnectionSlots;
  /**
   * Connections accepted before this resolves are held, unread, until it does: a thread that listens before
   * it may open the DB (see worker.ts) answers nothing rather than 500 meanwhile. Default: serve at once.
   */
  ready?: Promise<unknown>;
  clock?: Clock;
  timers?: Timers;
  /** One line per event, never a secret. Default: stderr. */
  log?: (line: string) => void;
}

export interface IcapServer {
  readonly server: Server;
  /** `reusePort`: share the port with other sockets that ask for it too (Linux SO_REUSEPORT). */
  listen(port: number, host: string, options?: { reusePort?: boolean }): Promise<AddressInfo>;
  /** Connections open now. */
  readonly connections: number;
  /** Refused connections lingering now. */
  readonly lingering: number;
  /**
   * Graceful shutdown: stop accepting, let every request already started get its answer, close idle and
   * refused connections at once and the others after their answer. Resolves once every connection is closed
   * (the timeouts bound how long that takes).
   */
  close(): Promise<void>;
}

export const DEFAULTS = {
  servicePath: '/reqmod',
  serviceName: 'Doorman captive portal',
  maxConnections: 100,
  optionsTtl: 300,
  idleTimeoutMs: 120_000,
  unprovenIdleTimeoutMs: 10_000,
  headerTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  decisionTimeoutMs: 10_000,
  refusedLingerMs: 1000,
  maxLingeringRefused: 16,
} as const;

/** The per-address cap when none is given: half the total, so one other address never crowds Squid out. */
export function defaultPerAddress(maxConnections: number): number {
  return Math.max(1, Math.floor(maxConnections / 2));
}

/** Refusals are logged at most this often, with how many were not, so a flood does not flood the log. */
const REFUSAL_LOG_MS = 1000;

export function createIcapServer({
  slots,
  ready,
  maxConnections = DEFAULTS.maxConnections,
  maxConnectionsPerAddress = defaultPerAddress(maxConnections),
  refusedLingerMs = DEFAULTS.refusedLingerMs,
  maxLingeringRefused = DEFAULTS.maxLingeringRefused,
  ...options
}: IcapServerOptions): IcapServer {
  const shared: Shared = {
    options: {
      ...DEFAULTS,
      clock: systemClock,
      timers: systemTimers,
      log: (line) => console.error(`icap: ${line}`),
      limits: {},
      ...options,
      maxConnections: Math.min(maxConnections, maxConnectionsPerAddress),
    },
    stamp: () => ({ istag: shared.options.istag(), now: shared.options.clock.now() }),
    draining: false,
  };
  const { clock, timers, log } = shared.options;
  const places = slots ?? sharedSlots(slotCounter(), maxConnections, maxConnectionsPerAddress);
  const refusals = new Refusals({ lingerMs: refusedLingerMs, maxLingering: maxLingeringRefused }, timers);
  const open = new Set<Connection>();
  let refusedLoggedAt = Number.NEGATIVE_INFINITY;
  let refusedUnlogged = 0;
  const refuse = (socket: Socket, why: 'total' | 'address') => {
    const now = clock.now();
    if (now - refusedLoggedAt >= REFUSAL_LOG_MS) {
      const more = refusedUnlogged > 0 ? ` (and ${refusedUnlogged} more since the last line)` : '';
      const limit =
        why === 'total' ? `${places.used} open` : `${maxConnectionsPerAddress} open from its address`;
      log(`connection from ${socket.remoteAddress ?? '?'} refused: ${limit}${more}`);
      refusedLoggedAt = now;
      refusedUnlogged = 0;
    } else refusedUnlogged++;
    refusals.refuse(socket, errorResponse(shared.stamp(), 503, true));
  };
  let held: Socket[] | undefined;
  if (ready !== undefined) {
    held = [];
    void ready.then(() => {
      const waiting = held ?? [];
      held = undefined;
      for (const socket of waiting) {
        socket.removeAllListeners('error');
        // Gone meanwhile (a reset): nothing to answer, no slot to take.
        if (socket.destroyed) continue;
        accept(socket);
      }
    });
  }
  const accept = (socket: Socket) => {
    if (shared.draining) {
      socket.destroy();
      return;
    }
    const slot = places.take(socket.remoteAddress ?? '');
    if ('refused' in slot) {
      refuse(socket, slot.refused);
      return;
    }
    const connection = new Connection(socket, shared, {
      onClose: () => {
        open.delete(connection);
        slot.give();
      },
      onProven: () => slot.prove(),
    });
    open.add(connection);
    // Created paused (pauseOnConnect, below): a 'data' listener alone does not start it.
    if (socket.isPaused()) socket.resume();
  };
  // Held sockets are not read at all (pauseOnConnect): a client's FIN then reaches the connection that
  // takes the socket on, rather than being seen, unheard, before it exists. A Connection reads from the start.
  const server = createServer({ allowHalfOpen: true, pauseOnConnect: ready !== undefined }, (socket) => {
    if (held === undefined) accept(socket);
    else {
      socket.on('error', () => socket.destroy());
      held.push(socket);
    }
  });
  return {
    server,
    get connections() {
      return open.size;
    },
    get lingering() {
      return refusals.lingering;
    },
    listen(port, host, { reusePort = false } = {}) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port, host, ...(reusePort ? { reusePort } : {}) }, () => {
          server.off('error', reject);
          resolve(server.address() as AddressInfo);
        });
      });
    },
    close() {
      shared.draining = true;
      for (const socket of held ?? []) socket.destroy();
      refusals.closeAll();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const connection of open) connection.drain();
      return closed;
    },
  };
}
