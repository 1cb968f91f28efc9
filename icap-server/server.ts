import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { systemClock, type Clock } from '../lib/clock.ts';
import { IcapProtocolError } from './errors.ts';
import {
  IcapParser,
  type IcapRequest,
  type ParserLimits,
  type ParserPhase,
  type ReqmodRequest,
} from './parser.ts';
import {
  errorResponse,
  httpResponse,
  noContentResponse,
  optionsResponse,
  unchangedRequest,
  type HttpAnswer,
  type Stamp,
} from './serializer.ts';

/**
 * The socket shell around the pure parser and serializer: persistent connections, one request at a time on
 * each (pipelined requests wait as bytes in that connection's parser), timers per connection, so a client
 * that stalls holds its own connection and nothing else.
 *
 * What this service decides is injected (`decide`), so the captive portal's logic plugs in without this file
 * knowing it; so is the ISTag (`istag`), which must change whenever a setting that changes answers does:
 * Squid re-reads OPTIONS and drops what it cached when the ISTag it sees changes.
 */
export type Decision = { kind: 'no-change' } | ({ kind: 'respond' } & HttpAnswer);

/** Timers, injectable so the idle, header and decision timeouts are tested without waiting. */
export interface Timers {
  set(task: () => void, ms: number): unknown;
  clear(handle: unknown): void;
  /**
   * Optional: start a timer that has not fired over again, as if just set. The idle timer is restarted after
   * every answer; Node's Timeout.refresh does that without a new timer object.
   */
  refresh?(handle: unknown): void;
}

export const systemTimers: Timers = {
  set: (task, ms) => setTimeout(task, ms),
  clear: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
  refresh: (handle) => (handle as ReturnType<typeof setTimeout>).refresh(),
};

export interface IcapServerOptions {
  /** What to do with one REQMOD. May be async; a throw or rejection is answered 500 (ours, not the client's). */
  decide: (request: ReqmodRequest) => Decision | Promise<Decision>;
  /** The current ISTag, unquoted, at most 32 characters. Called for every response. */
  istag: () => string;
  /** The service's path in icap://host:port/PATH. Other paths get 404. */
  servicePath?: string;
  /** The OPTIONS Service header. */
  serviceName?: string;
  /** Connections open at once (advertised as Max-Connections); one more is answered 503 and closed. */
  maxConnections?: number;
  /** Seconds a client may keep the OPTIONS answer. */
  optionsTtl?: number;
  /** A connection with no message in progress is closed after this long (longer than Squid's pconn_timeout). */
  idleTimeoutMs?: number;
  /** From a message's first byte until its heads are complete, however slowly they trickle in; then 408. */
  headerTimeoutMs?: number;
  /** Longest wait for `decide`; then 500. */
  decisionTimeoutMs?: number;
  limits?: Partial<ParserLimits>;
  /**
   * Connections counted together with other servers (worker threads listening on one port, see workers.ts),
   * so maxConnections holds for all of them. Default: this server's own count.
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

/** Places for connections, maybe shared with other threads. */
export interface ConnectionSlots {
  /** Take one; false when all are taken. */
  take(): boolean;
  give(): void;
  readonly used: number;
}

/**
 * Slots counted in shared memory (an Int32Array over a SharedArrayBuffer) by every thread holding it: an
 * atomic add either stays within `max` or is undone.
 */
export function sharedSlots(counter: Int32Array, max: number): ConnectionSlots {
  return {
    take: () => {
      if (Atomics.add(counter, 0, 1) < max) return true;
      Atomics.sub(counter, 0, 1);
      return false;
    },
    give: () => void Atomics.sub(counter, 0, 1),
    get used() {
      return Atomics.load(counter, 0);
    },
  };
}

export interface IcapServer {
  readonly server: Server;
  /** `reusePort`: share the port with other sockets that ask for it too (Linux SO_REUSEPORT). */
  listen(port: number, host: string, options?: { reusePort?: boolean }): Promise<AddressInfo>;
  /** Connections open now. */
  readonly connections: number;
  /**
   * Graceful shutdown: stop accepting, let every request already started get its answer, close idle
   * connections at once and the others after their answer. Resolves once every connection is closed (the
   * timeouts bound how long that takes).
   */
  close(): Promise<void>;
}

export const DEFAULTS = {
  servicePath: '/reqmod',
  serviceName: 'Doorman captive portal',
  maxConnections: 100,
  optionsTtl: 300,
  idleTimeoutMs: 120_000,
  headerTimeoutMs: 10_000,
  decisionTimeoutMs: 10_000,
} as const;

/** What every connection shares: settings and the shutdown flag. Requests hold no reference to it. */
interface Shared {
  options: Required<Omit<IcapServerOptions, 'limits' | 'slots' | 'ready'>> & {
    limits: Partial<ParserLimits>;
  };
  stamp(): Stamp;
  draining: boolean;
}

export function createIcapServer({ slots, ready, ...options }: IcapServerOptions): IcapServer {
  const shared: Shared = {
    options: {
      ...DEFAULTS,
      clock: systemClock,
      timers: systemTimers,
      log: (line) => console.error(`icap: ${line}`),
      limits: {},
      ...options,
    },
    stamp: () => ({ istag: shared.options.istag(), now: shared.options.clock.now() }),
    draining: false,
  };
  // By default a count of this server's own (Atomics work on an unshared array too).
  const places = slots ?? sharedSlots(new Int32Array(1), shared.options.maxConnections);
  const open = new Set<Connection>();
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
    if (!places.take()) {
      shared.options.log(`connection from ${socket.remoteAddress ?? '?'} refused: ${places.used} open`);
      socket.on('error', () => socket.destroy());
      socket.end(errorResponse(shared.stamp(), 503, true));
      // Read and drop what it sent: unread bytes at close would make the kernel reset the connection.
      socket.resume();
      return;
    }
    const connection = new Connection(socket, shared, () => {
      open.delete(connection);
      places.give();
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
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const connection of open) connection.drain();
      return closed;
    },
  };
}

type TimerPhase = ParserPhase | 'write' | 'linger';

interface Answer {
  bytes: Buffer;
  /** The last answer on this connection. */
  close: boolean;
}

/** Bytes read ahead (beyond the request being answered) before the socket is paused. */
const PAUSE_ABOVE = 64 * 1024;

class Connection {
  readonly #socket: Socket;
  readonly #shared: Shared;
  readonly #parser: IcapParser;
  #busy = false;
  /** The client has sent its FIN: answer what is complete, then close. */
  #ended = false;
  #closed = false;
  #timer: unknown;
  #timerPhase: TimerPhase | undefined;

  constructor(socket: Socket, shared: Shared, onClose: () => void) {
    this.#socket = socket;
    this.#shared = shared;
    this.#parser = new IcapParser(shared.options.limits);
    socket.on('data', (chunk: Buffer) => {
      // After our last answer, what still arrives is read and dropped (see #close).
      if (this.#closed) return;
      this.#parser.push(chunk);
      // While an answer is being made, what arrives waits in the parser (a pipelined request, say); past
      // PAUSE_ABOVE bytes the socket stops being read until the answer is out. Pausing on every request instead
      // would cost two system calls per request (the kernel's read interest off and on again).
      if (this.#busy && this.#parser.buffered > PAUSE_ABOVE) this.#socket.pause();
      this.#pump();
    });
    socket.on('end', () => {
      this.#ended = true;
      this.#pump();
    });
    socket.on('error', (error) => {
      this.#log(`connection error: ${error.message}`);
      socket.destroy();
    });
    socket.on('close', () => {
      this.#closed = true;
      this.#clearTimer();
      onClose();
    });
    this.#armTimer();
  }

  /** Shutdown: close now if nothing is in progress, else after the answer to what is. */
  drain(): void {
    if (!this.#busy && this.#parser.phase === 'idle') this.#close();
  }

  #pump(): void {
    while (!this.#busy && !this.#closed) {
      const event = this.#parser.next();
      if (event.kind === 'need-more') {
        if (this.#ended) {
          const error = this.#parser.end();
          if (error !== undefined) this.#log(error.message);
          this.#close();
        } else if (this.#shared.draining && this.#parser.phase === 'idle') {
          this.#close();
        } else {
          this.#armTimer();
          if (this.#socket.isPaused()) this.#socket.resume();
        }
        return;
      }
      if (event.kind === 'error') {
        this.#clearTimer();
        this.#fail(event.error);
        return;
      }
      // A header or body timer was for this message; an idle one runs on (see below).
      if (this.#timerPhase !== 'idle') this.#clearTimer();
      this.#busy = true;
      const answer = this.#answer(event.request);
      if (isThenable(answer)) {
        // No read timer while a decision is awaited (it has its own deadline).
        this.#clearTimer();
        void answer.then(({ bytes, close }) => {
          if (this.#send(bytes, close)) this.#pump();
        });
        return;
      }
      // Answered at once (the common case): no promise, no turn of the event loop, and the read timer is
      // left as it is (nothing can fire meanwhile) to be restarted, not replaced, when the loop waits again.
      if (!this.#send(answer.bytes, answer.close)) return;
    }
  }

  /** A malformed, oversized or timed-out message: its error status, then close only this connection. */
  #fail(error: IcapProtocolError): void {
    this.#log(`${error.code}: ${error.message}`);
    if (error.code === 'TRUNCATED') this.#close();
    else this.#send(errorResponse(this.#shared.stamp(), error.status, true), true);
  }

  /** The answer's bytes, at once when the decision is synchronous; a promise (never rejected) otherwise. */
  #answer(request: IcapRequest): Answer | Promise<Answer> {
    const { options } = this.#shared;
    // "Connection: close" from the client, or our shutdown: this is the last answer on this connection.
    const close = this.#shared.draining || request.headers.get('connection')?.toLowerCase() === 'close';
    try {
      // Every error answer ends the connection: c-icap-client, for one, waits for the close after a 404.
      if (request.service !== options.servicePath)
        return { bytes: errorResponse(this.#shared.stamp(), 404, true), close: true };
      if (request.method === 'OPTIONS') {
        const settings = {
          service: options.serviceName,
          maxConnections: options.maxConnections,
          optionsTtl: options.optionsTtl,
        };
        return { bytes: optionsResponse(this.#shared.stamp(), settings), close };
      }
      const decision = this.#decide(request);
      if (!isThenable(decision)) return this.#decided(request, decision, close);
      return Promise.resolve(decision).then(
        (made) => {
          try {
            return this.#decided(request, made, close);
          } catch (error) {
            return this.#internalError(error);
          }
        },
        (error: unknown) => this.#internalError(error),
      );
    } catch (error) {
      return this.#internalError(error);
    }
  }

  #decided(request: ReqmodRequest, decision: Decision, close: boolean): Answer {
    if (decision.kind === 'respond') return { bytes: httpResponse(this.#shared.stamp(), decision), close };
    if (request.allow204) return { bytes: noContentResponse(this.#shared.stamp()), close };
    const body = request.body.kind === 'full' ? request.body.data : undefined;
    return { bytes: unchangedRequest(this.#shared.stamp(), request.http.raw, body), close };
  }

  #internalError(error: unknown): Answer {
    this.#log(`internal error: ${error instanceof Error ? error.message : String(error)}`);
    try {
      return { bytes: errorResponse(this.#shared.stamp(), 500, true), close: true };
    } catch {
      // The ISTag source itself failed: answer without it rather than not at all.
      return { bytes: Buffer.from('ICAP/1.0 500 Server Error\r\nConnection: close\r\n\r\n'), close: true };
    }
  }

  /**
   * A synchronous decision is used as it is (a throw is answered 500 by #answer); only a promise gets the
   * deadline, so the common case costs no timer.
   */
  #decide(request: ReqmodRequest): Decision | Promise<Decision> {
    const { decide, decisionTimeoutMs, timers } = this.#shared.options;
    const made = decide(request);
    if (!isThenable(made)) return made;
    return new Promise<Decision>((resolve, reject) => {
      const timer = timers.set(
        () => reject(new Error(`no decision after ${decisionTimeoutMs} ms`)),
        decisionTimeoutMs,
      );
      Promise.resolve(made).then(
        (decision) => {
          timers.clear(timer);
          resolve(decision);
        },
        (error: unknown) => {
          timers.clear(timer);
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    });
  }

  /**
   * Write an answer. True when the connection may go on with the next request at once (the caller pumps);
   * false when it is closing, or waits for the client to read (then it pumps itself on 'drain').
   */
  #send(bytes: Buffer, close: boolean): boolean {
    if (this.#closed) return false;
    const flushed = this.#socket.write(bytes);
    if (close || this.#shared.draining) {
      this.#close();
      return false;
    }
    if (flushed) {
      this.#busy = false;
      return true;
    }
    // A client that does not read its answers gets no more of them; the idle timeout ends it.
    this.#setTimer('write', this.#shared.options.idleTimeoutMs, () => this.#socket.destroy());
    this.#socket.once('drain', () => {
      this.#clearTimer();
      this.#busy = false;
      this.#pump();
    });
    return false;
  }

  /** The read timer for where the parser stands: idle (close quietly), head (absolute, 408), body (per read). */
  #armTimer(): void {
    const phase = this.#parser.phase;
    const { idleTimeoutMs, headerTimeoutMs } = this.#shared.options;
    // The header deadline runs from the message's first byte: bytes trickling in do not push it back.
    if (phase === 'head' && this.#timerPhase === 'head') return;
    const { refresh } = this.#shared.options.timers;
    if (phase === 'idle' && this.#timerPhase === 'idle' && refresh !== undefined) refresh(this.#timer);
    else if (phase === 'idle') this.#setTimer('idle', idleTimeoutMs, () => this.#close());
    else if (phase === 'head') this.#setTimer('head', headerTimeoutMs, () => this.#timedOut('head'));
    else this.#setTimer('body', idleTimeoutMs, () => this.#timedOut('body'));
  }

  #timedOut(phase: string): void {
    this.#fail(new IcapProtocolError('TIMEOUT', `message ${phase} incomplete after the timeout`));
  }

  #setTimer(phase: TimerPhase, ms: number, task: () => void): void {
    this.#clearTimer();
    this.#timerPhase = phase;
    this.#timer = this.#shared.options.timers.set(() => {
      this.#timer = undefined;
      this.#timerPhase = undefined;
      task();
    }, ms);
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) this.#shared.options.timers.clear(this.#timer);
    this.#timer = undefined;
    this.#timerPhase = undefined;
  }

  /**
   * Half-close after the last answer and keep reading (and dropping) until the client closes too, or a short
   * linger runs out: closing with unread bytes in the kernel makes it send a reset, which can destroy the
   * answer before the client has read it.
   */
  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#socket.end();
    this.#socket.resume();
    this.#setTimer('linger', this.#shared.options.headerTimeoutMs, () => this.#socket.destroy());
  }

  #log(line: string): void {
    this.#shared.options.log(
      `${this.#socket.remoteAddress ?? '?'}:${this.#socket.remotePort ?? '?'} ${line}`,
    );
  }
}

function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
