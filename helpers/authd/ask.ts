import { connect } from 'node:net';

/**
 * One question to authd over one of its sockets, as a shim would send it, answered within `deadlineMs`: the
 * probe (probe.ts) and `doorman explain` (a session lookup exactly as Squid's, and the seamless query). The
 * answer is the first line that starts with the question's channel-ID, without its LF.
 */
export type AskResult =
  | { ok: true; ms: number; answer: string }
  | { ok: false; reason: 'no-socket' | 'refused' | 'timeout' | 'closed'; detail: string };

/** An answer to one question is a few hundred bytes; more than this without a line end is not authd. */
const MAX_ANSWER = 4096;

export function askAuthd(socketPath: string, line: string, deadlineMs: number): Promise<AskResult> {
  const started = performance.now();
  const channel = `${line.split(' ', 1)[0] ?? ''} `;
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    let got = '';
    const finish = (result: AskResult) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    // Bounds the connect too: a stopped authd's full backlog leaves connect() pending.
    const timer = setTimeout(
      () => finish({ ok: false, reason: 'timeout', detail: `no answer within ${deadlineMs} ms` }),
      deadlineMs,
    );
    socket.once('connect', () => socket.write(line));
    socket.on('data', (chunk: Buffer) => {
      got += chunk.toString('latin1');
      const nl = got.indexOf('\n');
      if (nl >= 0 && got.startsWith(channel))
        finish({ ok: true, ms: performance.now() - started, answer: got.slice(0, nl) });
      else if (nl >= 0 || got.length > MAX_ANSWER)
        finish({
          ok: false,
          reason: 'closed',
          detail: `unexpected answer ${JSON.stringify(got.slice(0, 80))}`,
        });
    });
    socket.once('error', (error: NodeJS.ErrnoException) =>
      finish({
        ok: false,
        reason: error.code === 'ENOENT' ? 'no-socket' : 'refused',
        detail: `${socketPath}: ${error.code ?? error.message}`,
      }),
    );
    socket.once('end', () => finish({ ok: false, reason: 'closed', detail: 'closed without an answer' }));
  });
}
