import { connect, type Socket } from 'node:net';
import type { Timers } from '../../../icap-server/timers.ts';

/** Timers that fire only when told, picked by their duration (each timeout below has its own). */
export class ManualTimers implements Timers {
  readonly pending = new Set<{ task: () => void; ms: number }>();
  /** How many timers were ever set, per duration. */
  readonly armed = new Map<number, number>();
  set = (task: () => void, ms: number) => {
    this.armed.set(ms, (this.armed.get(ms) ?? 0) + 1);
    const handle = { task, ms };
    this.pending.add(handle);
    return handle;
  };
  clear = (handle: unknown) => {
    this.pending.delete(handle as { task: () => void; ms: number });
  };
  fire(ms: number): number {
    let fired = 0;
    for (const handle of [...this.pending]) {
      if (handle.ms !== ms) continue;
      this.pending.delete(handle);
      handle.task();
      fired++;
    }
    return fired;
  }
}

export interface Client {
  socket: Socket;
  /** Everything received so far, as latin1 text. */
  received(): string;
  /** Resolves once `received()` satisfies `done`; rejects if the connection closes first. */
  until(done: (text: string) => boolean): Promise<string>;
  closed: Promise<void>;
  isClosed(): boolean;
}

/**
 * A connection to 127.0.0.1:port from `from`. `halfOpen`: it does not hang up when the server does (as a
 * client that holds its socket), so only the server's own close ends it.
 */
export async function client(
  port: number,
  { from, halfOpen = false }: { from?: string; halfOpen?: boolean } = {},
): Promise<Client> {
  const socket = connect({
    port,
    host: '127.0.0.1',
    allowHalfOpen: halfOpen,
    ...(from === undefined ? {} : { localAddress: from }),
  });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let text = '';
  let isClosed = false;
  const waiters = new Set<() => void>();
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1');
    for (const waiter of [...waiters]) waiter();
  });
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) =>
    socket.on('close', () => {
      isClosed = true;
      for (const waiter of [...waiters]) waiter();
      resolve();
    }),
  );
  return {
    socket,
    received: () => text,
    closed,
    isClosed: () => isClosed,
    until: (done) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (done(text)) {
            waiters.delete(check);
            resolve(text);
          } else if (isClosed) {
            waiters.delete(check);
            reject(new Error(`closed before the expected answer; got ${JSON.stringify(text)}`));
          }
        };
        waiters.add(check);
        check();
      }),
  };
}
