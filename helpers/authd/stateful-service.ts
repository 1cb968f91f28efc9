import type { Readable, Writable } from 'node:stream';
import { systemClock, type Clock } from '../../lib/clock.ts';
import { LineDecoder } from '../../lib/helper-protocol/line-decoder.ts';
import {
  formatStatefulReply,
  MAX_NEGOTIATE_LINE_BYTES,
  type StatefulScheme,
} from '../../lib/helper-protocol/negotiate.ts';
import type { Handshake } from '../../lib/seamless/handshake.ts';

/**
 * One Squid Negotiate or NTLM child, as authd sees it: one connection from its shim (docs/seamless-design.md
 * §2). Squid reserves a stateful child from `YR` to the final answer and sends no channel-IDs, so lines are
 * answered one at a time, in order, by one Handshake for the connection's whole life.
 *
 * - Lines are capped at MAX_NEGOTIATE_LINE_BYTES: an overlong line is skipped to its LF and answered BH,
 *   and the next line is served as usual (a new YR starts a new handshake).
 * - `handshake()` is asked once, at the first line: undefined means seamless is not enabled, and every line
 *   is answered BH (Squid should not be sending any; its configuration is stale until reconfigured).
 * - A timer releases an ntlm_auth lease at its deadline (the handshake's leaseMaxMs from its YR): a client
 *   that sends type-1 and goes silent keeps Squid's child reserved and sends nothing more.
 * - At the end of input the handshake is closed (its lease released) and the promise resolves. A connection
 *   closed before its answers (a shim that exited, EPIPE) frees everything as well: lines not yet answered are
 *   dropped, an answer being written is not waited for, and no timer is left behind.
 */
export interface StatefulServiceOptions {
  input: Readable;
  output: Writable;
  scheme: StatefulScheme;
  /** The connection's handshake; undefined when seamless is not enabled (every line → BH). */
  handshake: () => Handshake | undefined;
  /** Logs to authd's stderr; never a token. */
  log: (line: string) => void;
  /** The handshakes' clock, for the deadline timers' delays; the system's by default. */
  clock?: Clock;
  /** The timers for lease deadlines; the global ones by default (tests pass their own). */
  timers?: Timers;
  /** What this connection holds, added while it holds it: the service's counts (for tests and the log). */
  counts?: StatefulCounts;
}

export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Live connections, handshakes (made and not yet closed) and deadline timers, summed over connections. */
export interface StatefulCounts {
  connections: number;
  handshakes: number;
  timers: number;
}

/** The process's timers, unref'd: a pending deadline or flush never keeps authd alive. */
export const globalTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** Lines read ahead of their answers before reading pauses (each at most 64 KiB). */
const MAX_QUEUED_LINES = 8;

export async function serveStatefulConnection(options: StatefulServiceOptions): Promise<void> {
  const { input, output, scheme, log } = options;
  const timers = options.timers ?? globalTimers;
  const clock = options.clock ?? systemClock;
  const counts = options.counts ?? { connections: 0, handshakes: 0, timers: 0 };
  counts.connections++;
  const decoder = new LineDecoder(MAX_NEGOTIATE_LINE_BYTES);
  const bh = (message: string) => formatStatefulReply(scheme, { result: 'BH', message });
  let handshake: Handshake | undefined;
  let asked = false;
  /** The connection's handshake, asked for at the first line; a factory that throws is asked again later. */
  const current = (): Handshake | undefined | Error => {
    if (asked) return handshake;
    try {
      handshake = options.handshake();
      asked = true;
      if (handshake !== undefined) counts.handshakes++;
      return handshake;
    } catch (error) {
      // Try again on the next line: the cause (a DB being reopened) may pass.
      const why = error instanceof Error ? error : new Error(String(error));
      log(`${scheme}: no handshake: ${why.message}`);
      return why;
    }
  };

  // Answers go out in request order; one line at a time, so a slow Kerberos step holds the next line back,
  // which is what Squid expects of a stateful child.
  let chain: Promise<void> = Promise.resolve();
  let queued = 0;
  /** The peer is gone (the socket closed or failed): nothing more is answered or waited for. */
  let gone = false;
  const onGone = () => {
    gone = true;
    disarm();
  };
  output.once('close', onGone);
  output.once('error', onGone);
  // The write's callback runs once the line is handed on, or with an error (EPIPE, a destroyed socket), where
  // 'drain' would never come.
  const write = (text: string) =>
    new Promise<void>((resolve) => {
      if (gone || output.writableEnded || output.destroyed) return resolve();
      output.write(text, () => resolve());
    });
  const answer = async (line: string | undefined): Promise<string> => {
    if (line === undefined) {
      log(`${scheme}: request line longer than ${MAX_NEGOTIATE_LINE_BYTES} bytes: answered BH`);
      return bh(`request line longer than ${MAX_NEGOTIATE_LINE_BYTES} bytes`);
    }
    const machine = current();
    if (machine instanceof Error) return bh(`seamless authentication is unavailable: ${machine.message}`);
    if (machine === undefined) return bh('seamless authentication is not enabled');
    return machine.handle(line);
  };

  // One timer at most, for the lease held now: armed after each answer, gone when no lease is held.
  let deadline: { handle: unknown; at: number } | undefined;
  function disarm(): void {
    if (deadline === undefined) return;
    timers.clearTimeout(deadline.handle);
    deadline = undefined;
    counts.timers--;
  }
  const arm = () => {
    const at = gone ? undefined : handshake?.leaseDeadline();
    if (at === deadline?.at) return;
    disarm();
    if (at === undefined || handshake === undefined) return;
    const held = handshake;
    const handle = timers.setTimeout(
      () => {
        if (deadline?.handle !== handle) return;
        disarm();
        void held.releaseIfExpired().then(
          (released) => {
            if (released) log(`${scheme}: released an ntlm_auth lease its client held past the deadline`);
            arm();
          },
          () => {},
        );
      },
      Math.max(0, at - clock.now()),
    );
    deadline = { handle, at };
    counts.timers++;
  };

  await new Promise<void>((resolve) => {
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      resolve();
    };
    input.on('data', (chunk: Buffer) => {
      for (const frame of decoder.push(chunk)) {
        const line = frame.kind === 'line' ? frame.text : undefined;
        // Squid sends the next line only after the answer; a peer that floods is read no further ahead.
        if (++queued >= MAX_QUEUED_LINES) input.pause();
        chain = chain.then(async () => {
          // Once the peer is gone its lines are dropped unanswered: nobody reads the answers.
          if (!gone) {
            let text: string;
            try {
              text = await answer(line);
            } catch (error) {
              // Handshake.handle never rejects; this is the boundary in case that ever breaks.
              text = bh(`internal error: ${error instanceof Error ? error.message : String(error)}`);
            }
            arm();
            await write(text);
          }
          if (--queued < MAX_QUEUED_LINES && input.isPaused()) input.resume();
        });
      }
    });
    input.once('end', finish);
    input.once('close', finish);
    input.once('error', (error) => {
      log(`${scheme}: connection error: ${error.message}`);
      finish();
    });
  });
  await chain;
  output.off('close', onGone);
  output.off('error', onGone);
  gone = true;
  disarm();
  if (handshake !== undefined) {
    await handshake.close();
    counts.handshakes--;
  }
  counts.connections--;
}
