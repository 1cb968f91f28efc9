import type { Socket } from 'node:net';
import type { Timers } from './timers.ts';

export interface RefusalLimits {
  /** How long a refused connection is kept, half-closed, for its 503 to be read. */
  lingerMs: number;
  /** Refused connections kept lingering at once; beyond them a refused connection is closed at once. */
  maxLingering: number;
}

/**
 * Connections refused (over a connection limit) get their 503 and are closed. A few linger a moment first,
 * half-closed and read: closing with the client's unread request in the kernel makes it send a reset, which
 * can destroy the 503 before the client reads it. Beyond `maxLingering` the 503 is written and the socket
 * destroyed at once, so a flood of refused connections holds at most that many descriptors, never one per
 * client that does not hang up.
 */
export class Refusals {
  readonly #limits: RefusalLimits;
  readonly #timers: Timers;
  readonly #lingering = new Map<Socket, unknown>();

  constructor(limits: RefusalLimits, timers: Timers) {
    this.#limits = limits;
    this.#timers = timers;
  }

  /** Refused connections lingering now. */
  get lingering(): number {
    return this.#lingering.size;
  }

  refuse(socket: Socket, answer: Buffer): void {
    socket.on('error', () => socket.destroy());
    // A small answer on a fresh socket reaches the kernel within end() itself, before destroy() closes it.
    socket.end(answer);
    if (this.#lingering.size >= this.#limits.maxLingering) {
      socket.destroy();
      return;
    }
    const timer = this.#timers.set(() => socket.destroy(), this.#limits.lingerMs);
    this.#lingering.set(socket, timer);
    // The client hanging up ends the linger early (Node closes a socket ended both ways).
    socket.once('close', () => {
      this.#timers.clear(timer);
      this.#lingering.delete(socket);
    });
    // Read and drop what it sent (see above); pauseOnConnect may have left it paused.
    socket.resume();
  }

  /** Shutdown: every lingering connection closed now (its 503 is written) and its timer cleared. */
  closeAll(): void {
    for (const socket of [...this.#lingering.keys()]) socket.destroy();
  }
}
