import { askAuthd, type AskResult } from './ask.ts';

/**
 * Is authd answering? One session lookup over its socket, as a shim sends it, answered within `deadlineMs`.
 * The address asked about (192.0.2.0, TEST-NET-1) is never a client's, so the probe neither finds a session
 * nor marks one as seen. Any answer line (OK, ERR, even BH for a DB it cannot read) proves the process and its
 * event loop alive; what the DB says is the DB's matter, which a restart would not fix.
 */
export type ProbeResult = AskResult;

export const PROBE_LINE = '0 192.0.2.0 -\n';

export function probeAuthd(socketPath: string, deadlineMs: number): Promise<ProbeResult> {
  return askAuthd(socketPath, PROBE_LINE, deadlineMs);
}
