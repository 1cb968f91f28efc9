import { chmodSync, lstatSync, mkdirSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import type { Log } from '../../lib/log.ts';

/**
 * Serves one connection (one Squid child's shim) until `input` ends, every answer written; then the
 * connection is closed. Never rejects on the client's account (bad lines are answered, not thrown).
 */
export type ConnectionHandler = (input: Readable, output: Writable) => Promise<void>;

export interface Listener {
  /** Connections open now. */
  connections(): number;
  /**
   * Stop accepting, remove the socket files, end every connection's input (requests already read are still
   * answered; whatever a shim sends after that is answered BH by the shim once the connection closes), and
   * resolve once every handler has finished, or after `graceMs`, when the rest are cut.
   */
  close(graceMs: number): Promise<void>;
}

/** Sockets are the helper user's, read and written by Squid's children running as that user. */
const SOCKET_MODE = 0o660;

/**
 * One Unix socket per path, each with its handler. A file left at a path by an earlier authd (killed, never
 * unlinked) is removed first, only if it is a socket: anything else there is the administrator's, and an error.
 */
export async function listenHelperSockets(
  sockets: ReadonlyArray<{ path: string; handler: ConnectionHandler }>,
  log: Log,
): Promise<Listener> {
  const open = new Map<Socket, { input: PassThrough; done: Promise<void> }>();
  const servers: Server[] = [];
  const serve = (socket: Socket, handler: ConnectionHandler, path: string) => {
    // The handler reads a stream of its own, so that close() can end it while the socket still takes answers.
    const input = new PassThrough();
    socket.pipe(input);
    // A shim that dies mid-answer: its socket errors (EPIPE, ECONNRESET); the input must end all the same.
    socket.on('error', () => {});
    socket.on('close', () => input.end());
    const done = handler(input, socket).then(
      () => void socket.end(),
      (error: unknown) => {
        log(`${path}: connection failed: ${error instanceof Error ? error.message : String(error)}`);
        socket.destroy();
      },
    );
    const entry = { input, done };
    open.set(socket, entry);
    void done.then(() => open.delete(socket));
  };
  try {
    for (const { path, handler } of sockets) {
      removeStaleSocket(path);
      // allowHalfOpen: a shim's end (Squid closing its stdin) must not stop the answers still being written.
      const server = createServer({ allowHalfOpen: true }, (socket) => serve(socket, handler, path));
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(path, () => {
          server.off('error', reject);
          resolve();
        });
      });
      chmodSync(path, SOCKET_MODE);
      server.on('error', (error) => log(`${path}: ${error.message}`));
    }
  } catch (error) {
    for (const server of servers) server.close();
    throw error;
  }
  return {
    connections: () => open.size,
    async close(graceMs) {
      const closed = servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
      for (const { path } of sockets) removeStaleSocket(path);
      const entries = [...open];
      for (const [socket, { input }] of entries) {
        socket.unpipe(input);
        input.end();
      }
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
      await Promise.race([Promise.all(entries.map(([, e]) => e.done)), late]);
      clearTimeout(timer);
      for (const [socket] of open) socket.destroy();
      await Promise.all(closed);
    },
  };
}

/**
 * `<stateDir>/run`, mode 0750: its group is the helper user's primary group (whoever makes it runs as the
 * helper user), so Squid's children reach the sockets and nobody else lists them. Set explicitly: serve's
 * umask (0077) would leave 0700.
 */
export function makeRunDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o750 });
  const stat = lstatSync(dir);
  if (!stat.isDirectory())
    throw new Error(`${dir} is not a directory (a symbolic link?); refusing to use it`);
  if ((stat.mode & 0o777) !== 0o750) chmodSync(dir, 0o750);
}

function removeStaleSocket(path: string): void {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  if (!isSocket) throw new Error(`${path} exists and is not a socket: remove it, or move stateDir`);
  unlinkSync(path);
}
