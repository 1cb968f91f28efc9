import { createServer, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { addressGroup, normaliseIp } from '../lib/net/address.ts';

export interface ListenAddress {
  host: string;
  port: number;
}

export interface RunningServer {
  /** Where it actually listens (port 0 resolved), in the order given. */
  addresses: ListenAddress[];
  /** Stop accepting, drop idle keep-alive connections, and resolve when in-flight requests are done. */
  close(): Promise<void>;
}

export interface ConnectionLimits {
  /** Connections open at once over all listening addresses. */
  maxConnections: number;
  /** Connections open at once from one client address (IPv6: one /64). */
  maxConnectionsPerAddress: number;
  /** Peers held only to the total (trusted proxies: one Squid carries many clients' requests). */
  unlimitedAddresses?: readonly string[];
}

/** Defaults of config `server.*`: enough for a login storm, small enough that idle sockets cannot eat memory. */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  maxConnections: 1024,
  maxConnectionsPerAddress: 64,
};

/**
 * Limits for a small form API. Slow or oversized requests are cut off by Node before any middleware runs:
 * headers must arrive within 10 s of the connection (or of the previous answer) and be at most 16 KiB, the
 * whole request within 30 s; an idle keep-alive connection is closed after 5 s. Node checks the first two
 * every connectionsCheckingInterval (30 s by default): every 2 s, so a silent socket is gone within 12 s.
 */
const SERVER_OPTIONS = {
  maxHeaderSize: 16 * 1024,
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 5_000,
  connectionsCheckingInterval: 2_000,
} as const;

/**
 * Listen on every address, or on none: if one fails the others are closed again and the error is thrown.
 * Connections over `limits` are closed as soon as they are accepted, before a byte is read.
 */
export async function startServer(
  app: { callback(): RequestListener },
  listen: readonly ListenAddress[],
  limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS,
): Promise<RunningServer> {
  const admit = connectionGate(limits);
  const servers: Server[] = [];
  const addresses: ListenAddress[] = [];
  const close = async () => {
    await Promise.all(servers.map(closeServer));
  };
  for (const { host, port } of listen) {
    const server = createServer(SERVER_OPTIONS, app.callback());
    // Before the HTTP server's own listener: a refused socket never gets a parser.
    server.prependListener('connection', admit);
    servers.push(server);
    try {
      addresses.push(await listenOn(server, host, port));
    } catch (error) {
      await close();
      const where = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
      const why = error instanceof Error ? error.message : String(error);
      throw new Error(`cannot listen on ${where}: ${why}`, { cause: error });
    }
  }
  return { addresses, close };
}

function listenOn(server: Server, host: string, port: number): Promise<ListenAddress> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      const bound = server.address();
      // Always an AddressInfo for a TCP listener; the string form is for pipes and Unix sockets.
      resolve(
        typeof bound === 'object' && bound !== null
          ? { host: bound.address, port: bound.port }
          : { host, port },
      );
    });
  });
}

function closeServer(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  return new Promise((resolve, reject) => {
    server.close((error) => (error ? reject(error) : resolve()));
    server.closeIdleConnections();
  });
}

/**
 * Counts open connections, in total (shared by every listening address) and per client address group, and
 * destroys a new one over either limit. Counts drop when a socket closes, however it closes.
 */
function connectionGate(limits: ConnectionLimits): (socket: Socket) => void {
  // Exactly the proxies' own addresses: not their /64, which may hold every client on the proxy's LAN.
  const unlimited = new Set((limits.unlimitedAddresses ?? []).map((a) => normaliseIp(a) ?? a));
  const perAddress = new Map<string, number>();
  let total = 0;
  return (socket) => {
    const peer = socket.remoteAddress ?? '';
    const group = addressGroup(peer);
    const mine = perAddress.get(group) ?? 0;
    if (
      total >= limits.maxConnections ||
      (!unlimited.has(normaliseIp(peer) ?? peer) && mine >= limits.maxConnectionsPerAddress)
    ) {
      socket.destroy();
      return;
    }
    total++;
    perAddress.set(group, mine + 1);
    socket.once('close', () => {
      total--;
      const left = (perAddress.get(group) ?? 1) - 1;
      if (left > 0) perAddress.set(group, left);
      else perAddress.delete(group);
    });
  };
}
