import { connect } from 'node:net';

/**
 * Is authd answering? One session lookup over its socket, as a shim sends it, answered within `deadlineMs`.
 * The address asked about (192.0.2.0, TEST-NET-1) is never a client's, so the probe neither finds a session
 * nor marks one as seen. Any answer line (OK, ERR, even BH for a DB it cannot read) proves the process and its
 * event loop alive; what the DB says is the DB's matter, which a restart would not fix.
 */
export type ProbeResult =
  | { ok: true; ms: number; answer: string }
  | { ok: false; reason: 'no-socket' | 'refused' | 'timeout' | 'closed'; detail: string };

export const PROBE_LINE = '0 192.0.2.0 -\n';
/** An answer to the probe is a few bytes; more than this without a line end is not authd. */
const MAX_ANSWER = 4096;

export function probeAuthd(socketPath: string, deadlineMs: number): Promise<ProbeResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    let got = '';
    const finish = (result: ProbeResult) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    // Bounds the connect too: a stopped authd's full backlog leaves connect() pending.
    const timer = setTimeout(
      () => finish({ ok: false, reason: 'timeout', detail: `no answer within ${deadlineMs} ms` }),
      deadlineMs,
    );
    socket.once('connect', () => socket.write(PROBE_LINE));
    socket.on('data', (chunk: Buffer) => {
      got += chunk.toString('latin1');
      const nl = got.indexOf('\n');
      if (nl >= 0 && got.startsWith('0 '))
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
