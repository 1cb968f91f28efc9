import type { Readable, Writable } from 'node:stream';
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
 * - A sweep releases an ntlm_auth lease left idle by a client that went away (Squid keeps the child reserved
 *   and sends nothing more).
 * - At the end of input the handshake is closed (its lease released) and the promise resolves.
 */
export interface StatefulServiceOptions {
  input: Readable;
  output: Writable;
  scheme: StatefulScheme;
  /** The connection's handshake; undefined when seamless is not enabled (every line → BH). */
  handshake: () => Handshake | undefined;
  /** Logs to authd's stderr; never a token. */
  log: (line: string) => void;
  /** How often to offer the handshake a chance to release an idle lease (default 5 s). */
  sweepMs?: number;
}

/** Lines read ahead of their answers before reading pauses (each at most 64 KiB). */
const MAX_QUEUED_LINES = 8;

export async function serveStatefulConnection(options: StatefulServiceOptions): Promise<void> {
  const { input, output, scheme, log } = options;
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
  const write = (text: string) =>
    new Promise<void>((resolve) => {
      if (output.writableEnded || output.destroyed) return resolve();
      if (output.write(text)) resolve();
      else output.once('drain', resolve);
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

  const sweep = setInterval(() => {
    if (handshake === undefined) return;
    void handshake.releaseIfIdle().then(
      (released) => released && log(`${scheme}: released an idle ntlm_auth lease`),
      () => {},
    );
  }, options.sweepMs ?? 5000);
  sweep.unref();

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
          let text: string;
          try {
            text = await answer(line);
          } catch (error) {
            // Handshake.handle never rejects; this is the boundary in case that ever breaks.
            text = bh(`internal error: ${error instanceof Error ? error.message : String(error)}`);
          }
          await write(text);
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
  clearInterval(sweep);
  await handshake?.close();
}
