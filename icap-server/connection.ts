import type { Socket } from 'node:net';
import type { Clock } from '../lib/clock.ts';
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
import type { Timers } from './timers.ts';
import { secondsSince } from '../lib/metrics/buckets.ts';
import { countIcap, icapHttpAnswer, type IcapAnswer } from '../lib/metrics/icap.ts';

/**
 * One accepted ICAP connection (see server.ts): persistent, one request at a time (pipelined requests wait as
 * bytes in its parser), with its own timers, so a client that stalls holds its own connection and nothing else.
 */
export type Decision = { kind: 'no-change' } | ({ kind: 'respond' } & HttpAnswer);

/** What every connection is run with (server.ts fills in the defaults). */
export interface ConnectionOptions {
  decide: (request: ReqmodRequest) => Decision | Promise<Decision>;
  istag: () => string;
  /** Whether a request proves its connection to be the trusted client's (server.ts). */
  proves?: (request: IcapRequest) => boolean;
  servicePath: string;
  serviceName: string;
  /** Advertised in OPTIONS as Max-Connections. */
  maxConnections: number;
  optionsTtl: number;
  idleTimeoutMs: number;
  unprovenIdleTimeoutMs: number;
  headerTimeoutMs: number;
  requestTimeoutMs: number;
  decisionTimeoutMs: number;
  limits: Partial<ParserLimits>;
  clock: Clock;
  timers: Timers;
  log: (line: string) => void;
}

/** What every connection shares: settings and the shutdown flag. Requests hold no reference to it. */
export interface Shared {
  options: ConnectionOptions;
  stamp(): Stamp;
  draining: boolean;
}

type TimerPhase = ParserPhase | 'write' | 'linger';

interface Answer {
  bytes: Buffer;
  /** The last answer on this connection. */
  close: boolean;
  /** What it was, for the metrics (lib/metrics/icap.ts). */
  kind: IcapAnswer;
}

/** Bytes read ahead (beyond the request being answered) before the socket is paused. */
const PAUSE_ABOVE = 64 * 1024;

export class Connection {
  readonly #socket: Socket;
  readonly #shared: Shared;
  readonly #parser: IcapParser;
  #busy = false;
  /** The client has sent its FIN: answer what is complete, then close. */
  #ended = false;
  #closed = false;
  #timer: unknown;
  #timerPhase: TimerPhase | undefined;
  /** When the message being read began (clock ms); undefined between messages. */
  #messageStart: number | undefined;
  /** A request proved this connection the trusted client's (options.proves). */
  #proven = false;
  readonly #onProven: () => void;
  /** The running idle timer's duration (an unproven connection's is shorter). */
  #idleMs = 0;

  constructor(
    socket: Socket,
    shared: Shared,
    { onClose, onProven }: { onClose: () => void; onProven: () => void },
  ) {
    this.#socket = socket;
    this.#shared = shared;
    this.#onProven = onProven;
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
      this.#messageStart = undefined;
      this.#busy = true;
      if (!this.#proven) this.#checkProof(event.request);
      const started = performance.now();
      const answer = this.#answer(event.request);
      if (isThenable(answer)) {
        // No read timer while a decision is awaited (it has its own deadline).
        this.#clearTimer();
        void answer.then(({ bytes, close, kind }) => {
          countIcap(kind, secondsSince(started));
          if (this.#send(bytes, close)) this.#pump();
        });
        return;
      }
      countIcap(answer.kind, secondsSince(started));
      // Answered at once (the common case): no promise, no turn of the event loop, and the read timer is
      // left as it is (nothing can fire meanwhile) to be restarted, not replaced, when the loop waits again.
      if (!this.#send(answer.bytes, answer.close)) return;
    }
  }

  /** Once a request proves the connection (server.ts: Squid's key), it counts and idles as Squid's. */
  #checkProof(request: IcapRequest): void {
    const { proves } = this.#shared.options;
    let proven = false;
    try {
      proven = proves?.(request) ?? false;
    } catch (error) {
      // The key cannot be read yet, say: not proven, and asked again on the next request.
      this.#log(
        `cannot check the request's proof: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    if (!proven) return;
    this.#proven = true;
    this.#onProven();
  }

  /** A malformed, oversized or timed-out message: its error status, then close only this connection. */
  #fail(error: IcapProtocolError): void {
    this.#log(`${error.code}: ${error.message}`);
    countIcap('error');
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
        return { bytes: errorResponse(this.#shared.stamp(), 404, true), close: true, kind: 'error' };
      if (request.method === 'OPTIONS') {
        const settings = {
          service: options.serviceName,
          maxConnections: options.maxConnections,
          optionsTtl: options.optionsTtl,
        };
        return { bytes: optionsResponse(this.#shared.stamp(), settings), close, kind: 'options' };
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
    if (decision.kind === 'respond') {
      const bytes = httpResponse(this.#shared.stamp(), decision);
      return { bytes, close, kind: icapHttpAnswer(decision.status) };
    }
    if (request.allow204) return { bytes: noContentResponse(this.#shared.stamp()), close, kind: '204' };
    const body = request.body.kind === 'full' ? request.body.data : undefined;
    return {
      bytes: unchangedRequest(this.#shared.stamp(), request.http.raw, body),
      close,
      kind: 'unmodified',
    };
  }

  #internalError(error: unknown): Answer {
    this.#log(`internal error: ${error instanceof Error ? error.message : String(error)}`);
    try {
      return { bytes: errorResponse(this.#shared.stamp(), 500, true), close: true, kind: 'error' };
    } catch {
      // The ISTag source itself failed: answer without it rather than not at all.
      const bytes = Buffer.from('ICAP/1.0 500 Server Error\r\nConnection: close\r\n\r\n');
      return { bytes, close: true, kind: 'error' };
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

  /**
   * The read timer for where the parser stands: idle (close quietly: after idleTimeoutMs once proven, after
   * unprovenIdleTimeoutMs before, from the connection's start too); head and body (408) at deadlines that run
   * from the message's first byte, so bytes trickling in push neither back: the head within headerTimeoutMs,
   * the whole message within requestTimeoutMs.
   */
  #armTimer(): void {
    const phase = this.#parser.phase;
    const { idleTimeoutMs, unprovenIdleTimeoutMs, headerTimeoutMs, requestTimeoutMs, clock, timers } =
      this.#shared.options;
    if (phase === 'idle') {
      this.#messageStart = undefined;
      const ms = this.#proven ? idleTimeoutMs : unprovenIdleTimeoutMs;
      if (this.#timerPhase === 'idle' && this.#idleMs === ms && timers.refresh !== undefined)
        timers.refresh(this.#timer);
      else {
        this.#setTimer('idle', ms, () => this.#close());
        this.#idleMs = ms;
      }
      return;
    }
    if (phase === this.#timerPhase) return;
    const now = clock.now();
    this.#messageStart ??= now;
    const left = Math.max(0, this.#messageStart + requestTimeoutMs - now);
    if (phase === 'head')
      this.#setTimer('head', Math.min(headerTimeoutMs, left), () => this.#timedOut('head'));
    else this.#setTimer('body', left, () => this.#timedOut('body'));
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
