import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { useTempDir } from '../support/temp-dir.ts';
import { Shim, SHIM_DOWN, type ShimBounds } from './shim.ts';

/** Answers one request line on one of the service's connections (or leaves it unanswered). */
export type Answer = (line: string, socket: Socket) => void;

/**
 * A stand-in for authd on one Unix socket: records request lines (all connections together) and the
 * connections themselves, and lets the test answer (or not).
 */
export class StandInService {
  readonly server: Server;
  readonly connections: Socket[] = [];
  readonly received: string[] = [];
  #wake: () => void = () => {};

  constructor(answer?: Answer) {
    this.server = createServer((socket) => {
      this.connections.push(socket);
      let partial = '';
      socket.on('data', (d: Buffer) => {
        const parts = (partial + d.toString('latin1')).split('\n');
        partial = parts.pop() ?? '';
        for (const line of parts) {
          this.received.push(line);
          answer?.(line, socket);
        }
        this.#wake();
      });
      socket.on('error', () => {});
      this.#wake();
    });
  }

  listen(path: string): Promise<void> {
    return new Promise((resolve) => this.server.listen(path, resolve));
  }

  /** Resolves once `check` holds, checked after each connection and each read (the test's timeout bounds it). */
  async until(check: () => boolean): Promise<void> {
    while (!check()) await new Promise<void>((resolve) => (this.#wake = resolve));
  }

  /** Stops listening (the socket file goes) and cuts every connection. */
  close(): Promise<void> {
    for (const socket of this.connections) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Answers `ID OK user=<the request's first field>` (or without an ID), as the session helper would. */
export const echo: Answer = (line, socket) => {
  const words = line.split(' ');
  const id = /^\d+$/.test(words[0] ?? '') ? `${words.shift()} ` : '';
  socket.write(`${id}OK user=${words[0]}\n`);
};

/** Shims and stand-in services on one socket path in a fresh directory per test, all stopped afterwards. */
export function useShimLab(prefix: string) {
  const tmp = useTempDir(prefix);
  const shims: Shim[] = [];
  const services: StandInService[] = [];
  afterEach(async () => {
    for (const s of shims.splice(0)) s.kill();
    await Promise.all(services.splice(0).map((s) => s.close()));
  });
  const socket = () => join(tmp.dir, 'session.sock');
  return {
    socket,
    shim(concurrent: boolean, bounds?: ShimBounds): Shim {
      const s = new Shim(socket(), concurrent, bounds);
      shims.push(s);
      return s;
    },
    async service(answer?: Answer): Promise<StandInService> {
      const s = new StandInService(answer);
      services.push(s);
      await s.listen(socket());
      return s;
    },
  };
}

/**
 * Past the hold the shim tries the socket about once a second: ask (channel-IDs from `first`, one line of
 * output each) until an answer comes from the service rather than the shim. Returns the channel-ID served.
 */
export async function askUntilServed(s: Shim, first: number, field: string): Promise<number> {
  for (let id = first; ; id++) {
    const line = await s.ask(`${id} ${field}`);
    if (line === `${id} OK user=${field}`) return id;
    if (line !== `${id} ${SHIM_DOWN}`) throw new Error(`unexpected answer: ${line}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
