import { createServer, type RequestListener, type Server } from 'node:http';

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

/**
 * Limits for a small form API. Slow or oversized requests are cut off by Node before any middleware runs:
 * headers must arrive within 10 s and be at most 16 KiB, the whole request within 30 s.
 */
const SERVER_OPTIONS = {
  maxHeaderSize: 16 * 1024,
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 5_000,
} as const;

/** Listen on every address, or on none: if one fails the others are closed again and the error is thrown. */
export async function startServer(
  app: { callback(): RequestListener },
  listen: readonly ListenAddress[],
): Promise<RunningServer> {
  const servers: Server[] = [];
  const addresses: ListenAddress[] = [];
  const close = async () => {
    await Promise.all(servers.map(closeServer));
  };
  for (const { host, port } of listen) {
    const server = createServer(SERVER_OPTIONS, app.callback());
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
