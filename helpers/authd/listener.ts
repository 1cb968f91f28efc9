import { chmodSync, linkSync, lstatSync, mkdirSync, renameSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
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
  /** Each listening socket's descriptor, by path (for handing them to a successor). */
  descriptors(): Map<string, number>;
  /**
   * The first socket file that is no longer the one listening here (removed, or replaced by another
   * process's): no new shim can reach this process through it. undefined: all are in place (or the files are
   * the service manager's, not checked).
   */
  missing(): string | undefined;
  /**
   * Stop accepting, remove the socket files (unless `keepFiles`: a successor or the service manager listens on
   * them), end every connection's input (requests already read are still answered; whatever a shim sends after
   * that it sends again on its next connection, or answers BH), and resolve once every handler has finished,
   * or after `graceMs`, when the rest are cut.
   */
  close(graceMs: number, keepFiles?: boolean): Promise<void>;
}

/** A socket to serve: made at `path`, or, with `fd`, one inherited already listening (bound to `path`). */
export interface HelperSocket {
  path: string;
  handler: ConnectionHandler;
  fd?: number;
}

export class ListenerError extends Error {
  override name = 'ListenerError';
  readonly code: 'ALREADY_RUNNING' | 'NOT_A_SOCKET';
  constructor(code: 'ALREADY_RUNNING' | 'NOT_A_SOCKET', message: string) {
    super(message);
    this.code = code;
  }
}

/** Sockets are the helper user's, read and written by Squid's children running as that user. */
const SOCKET_MODE = 0o660;

/**
 * One Unix socket per path, each with its handler. A file left at a path by an earlier authd (killed, never
 * unlinked) is removed first, only if it is a socket nobody accepts on: a live one is another authd's
 * (ALREADY_RUNNING), anything else there is the administrator's (NOT_A_SOCKET). Inherited descriptors are
 * served as they are; their files are not ours to check (`ownFiles` false: the service manager's).
 */
export async function listenHelperSockets(
  sockets: readonly HelperSocket[],
  log: Log,
  ownFiles = true,
): Promise<Listener> {
  const open = new Map<Socket, { input: PassThrough; done: Promise<void> }>();
  // Every connection until it is closed, answered or not: one answered and ended on our side may still be
  // open on the peer's (half-open), and a server closes only once all are.
  const accepted = new Set<Socket>();
  const servers: Server[] = [];
  const serve = (socket: Socket, handler: ConnectionHandler, path: string) => {
    accepted.add(socket);
    socket.once('close', () => accepted.delete(socket));
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
  const inodes = new Map<string, number>();
  const descriptors = new Map<string, number>();
  try {
    for (const { path, handler, fd } of sockets) {
      if (fd === undefined) await removeStaleSocket(path);
      // allowHalfOpen: a shim's end (Squid closing its stdin) must not stop the answers still being written.
      const server = createServer({ allowHalfOpen: true }, (socket) => serve(socket, handler, path));
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(fd === undefined ? path : { fd }, () => {
          server.off('error', reject);
          resolve();
        });
      });
      if (fd === undefined) chmodSync(path, SOCKET_MODE);
      if (ownFiles) inodes.set(path, lstatSync(path).ino);
      descriptors.set(path, listeningFd(server));
      server.on('error', (error) => log(`${path}: ${error.message}`));
    }
  } catch (error) {
    for (const server of servers) server.close();
    throw error;
  }
  return {
    connections: () => open.size,
    descriptors: () => new Map(descriptors),
    missing() {
      for (const [path, ino] of inodes) {
        const now = lstatSync(path, { throwIfNoEntry: false });
        if (now === undefined || now.ino !== ino || !now.isSocket()) return path;
      }
      return undefined;
    },
    async close(graceMs, keepFiles = false) {
      // libuv unlinks the path a server bound when it closes: a file a successor still listens on is kept
      // under a second name and put back, so it is missing for microseconds (a shim connecting then tries
      // again 100 ms later).
      const kept = keepFiles && ownFiles ? [...inodes.keys()].map((path) => keepAside(path)) : [];
      const closed = servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())));
      for (const { path, aside } of kept) {
        // One inherited by descriptor was never bound here, and libuv leaves its file alone.
        if (lstatSync(path, { throwIfNoEntry: false }) === undefined) renameSync(aside, path);
        else unlinkIfThere(aside);
      }
      // Only files still ours: one a newer authd has put in its place is that one's.
      if (!keepFiles && ownFiles)
        for (const [path, ino] of inodes)
          if (lstatSync(path, { throwIfNoEntry: false })?.ino === ino) unlinkSync(path);
      const entries = [...open];
      for (const [socket, { input }] of entries) {
        socket.unpipe(input);
        // Read on and drop: a paused socket never sees the shim's end, and keeps no event loop alive (the
        // process would end with this close unfinished). Lines dropped here the shim sends again.
        socket.resume();
        input.end();
      }
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
      await Promise.race([Promise.all(entries.map(([, e]) => e.done)), late]);
      clearTimeout(timer);
      // Cut what is left, answered connections whose peer never closed its end among them (a peer that stops
      // reading would otherwise hold this close, and the process, for ever).
      for (const socket of accepted) socket.destroy();
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

async function removeStaleSocket(path: string): Promise<void> {
  const found = lstatSync(path, { throwIfNoEntry: false });
  if (found === undefined) return;
  if (!found.isSocket())
    throw new ListenerError(
      'NOT_A_SOCKET',
      `${path} exists and is not a socket: remove it, or move stateDir`,
    );
  if (await accepting(path))
    throw new ListenerError(
      'ALREADY_RUNNING',
      `${path}: another authd is listening there (doorman authd stop, or doorman authd restart to replace it)`,
    );
  unlinkSync(path);
}

/** A second name for the socket file at `path`, in the same directory (so a rename puts it back). */
function keepAside(path: string): { path: string; aside: string } {
  const aside = `${path}.${process.pid}.keep`;
  unlinkIfThere(aside);
  linkSync(path, aside);
  return { path, aside };
}

function unlinkIfThere(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** Whether something accepts connections on the socket at `path` (a refused or failed connect: nothing). */
export function accepting(path: string, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    // A stopped process's full backlog leaves connect() pending: that is a live socket, not a stale one.
    const timer = setTimeout(() => done(true), timeoutMs);
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * The listening socket's descriptor. Node keeps it on the server's handle (`_handle.fd`, set on every Unix
 * platform since Node 0.x) and has no public accessor; a successor authd inherits it through spawn's stdio.
 */
function listeningFd(server: Server): number {
  const fd = (server as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) throw new Error('a listening socket without a descriptor');
  return fd;
}
