import type { Readable, Writable } from 'node:stream';
import { LineDecoder } from './line-decoder.ts';
import {
  bh,
  channelOf,
  formatCacheLogLine,
  formatReply,
  parseRequest,
  type HelperReply,
  type HelperRequest,
} from './message.ts';

export interface HelperOptions {
  input: Readable;
  output: Writable;
  /** Answer one request. A thrown error (ours, not the user's) becomes BH; the helper goes on. */
  handle: (request: HelperRequest) => HelperReply | Promise<HelperReply>;
  /** Squid sends channel-IDs when the helper is configured with concurrency=N, N > 0. */
  channelIds: boolean;
  maxLineBytes?: number;
  /** Logs to stderr (cache.log); never stdout, which is Squid's. */
  log: (line: string) => void;
  /**
   * Where a reply's cacheLog line goes. false (the default, a helper Squid runs itself): `log`, its stderr.
   * true (authd, behind the shim): into the output as a `#` line before the reply, which the shim writes to
   * its own stderr, Squid's cache.log.
   */
  cacheLogInline?: boolean;
  /** Called before the requests of each read are answered (a cache can check it is still current). */
  beforeBatch?: () => void;
  /** Called after each read's requests: a place for periodic work (flushing "last seen"). */
  afterBatch?: () => void;
}

/** What a service gives runHelper (the rest, the streams and the log, are the caller's). */
export type HelperHandlers = Pick<HelperOptions, 'handle' | 'beforeBatch' | 'afterBatch'>;

/** Squid's own helper buffer is 32 KiB per line (Kerberos tokens can be large); nothing we read is longer. */
export const DEFAULT_MAX_LINE_BYTES = 32 * 1024;

/**
 * The I/O shell around the pure codec: read stdin, answer on stdout, never exit on bad input. Synchronous
 * answers to one read are written in one write; asynchronous ones as they settle (in request order when
 * there are no channel-IDs, since Squid then matches replies by position). Resolves when stdin ends and every
 * answer is written.
 */
export function runHelper(options: HelperOptions): Promise<void> {
  const { input, output, handle, channelIds, log } = options;
  const decoder = new LineDecoder(options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES);
  let pending = 0;
  let ended = false;
  let ordered: Promise<void> = Promise.resolve();
  let finish: () => void = () => {};
  const done = new Promise<void>((resolve) => (finish = resolve));

  const write = (text: string) => {
    if (text.length > 0 && !output.write(text)) {
      input.pause();
      output.once('drain', () => input.resume());
    }
  };
  // Asynchronous answers that settle together leave in one write (one syscall, not one per answer).
  let unsent = '';
  let flushing = false;
  const send = (text: string) => {
    unsent += text;
    if (flushing) return;
    flushing = true;
    setImmediate(() => {
      flushing = false;
      const out = unsent;
      unsent = '';
      write(out);
      settle();
    });
  };
  const settle = () => {
    if (ended && pending === 0 && unsent === '') void ordered.then(finish);
  };
  const fail = (channel: string | undefined, error: unknown) => {
    // Anything can be thrown, undefined included: reading .message off it must not throw in turn.
    log(`internal error: ${error instanceof Error ? error.message : String(error)}`);
    return formatReply(channel, bh('internal error, see cache.log'));
  };
  // A reply the handler built wrongly (a bad key name) is our error too: BH, not a crash.
  const format = (channel: string | undefined, reply: HelperReply) => {
    try {
      const line = formatReply(channel, reply);
      if (reply.cacheLog === undefined) return line;
      if (options.cacheLogInline === true) return formatCacheLogLine(reply.cacheLog) + line;
      log(reply.cacheLog);
      return line;
    } catch (error) {
      return fail(channel, error);
    }
  };

  input.on('data', (chunk: Buffer) => {
    let batch = '';
    options.beforeBatch?.();
    for (const frame of decoder.push(chunk)) {
      if (frame.kind === 'overlong') {
        log('request line too long: answered BH');
        batch += formatReply(channelOf(frame.head, channelIds), bh('request line too long'));
        continue;
      }
      const parsed = parseRequest(frame.text, channelIds);
      if (!parsed.ok) {
        batch += formatReply(parsed.channel, bh(parsed.message));
        continue;
      }
      const { channel } = parsed.request;
      let answer: HelperReply | Promise<HelperReply>;
      try {
        answer = handle(parsed.request);
      } catch (error) {
        batch += fail(channel, error);
        continue;
      }
      if (!(answer instanceof Promise)) {
        batch += format(channel, answer);
        continue;
      }
      pending++;
      const line = answer.then(
        (reply) => format(channel, reply),
        (error: unknown) => fail(channel, error),
      );
      if (channelIds) {
        void line.then((text) => {
          pending--;
          send(text);
        });
      } else {
        // Without channel-IDs replies must keep request order: what is answered so far goes first, then
        // this one, and everything after waits behind it.
        const before = batch;
        batch = '';
        ordered = ordered.then(async () => {
          write(before);
          write(await line);
          pending--;
          settle();
        });
      }
    }
    if (!channelIds && pending > 0) {
      // Keep the rest of this batch behind the asynchronous answers queued before it. Counted as pending
      // until written, so that input arriving before this runs (from a microtask) queues behind it too.
      const text = batch;
      pending++;
      ordered = ordered.then(() => {
        write(text);
        pending--;
        settle();
      });
    } else {
      write(batch);
    }
    options.afterBatch?.();
  });
  input.on('end', () => {
    ended = true;
    settle();
  });
  return done;
}
