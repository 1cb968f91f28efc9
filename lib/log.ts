import { closeSync, constants, fstatSync, openSync, renameSync, statSync, writeSync } from 'node:fs';
/**
 * One-line logs on stderr. For a helper, stderr is cache.log and stdout is Squid's; for the web app and CLI,
 * stderr is where operators look. Callers never pass secrets (passwords, keys, tickets) in.
 */
export type Log = (line: string) => void;

/**
 * A text as one log line: line breaks (a stack trace's, an error message's) become " | ", so every line of the
 * log is one event and a grep for a time or a pid finds all of it.
 */
export function oneLine(text: string): string {
  if (!/[\r\n\u2028\u2029]/.test(text)) return text;
  return text
    .split(/\r\n|[\r\n\u2028\u2029]/)
    .map((part) => part.trim())
    .join(' | ');
}

/** The line as every Doorman log writes it: time, program[pid], the text on one line. */
const logLine = (program: string, line: string) =>
  `${new Date().toISOString()} ${program}[${process.pid}]: ${oneLine(line)}\n`;

/** A daemon's own log file is renamed to `<file>.1` (one generation kept) before it would pass this size. */
export const MAX_DAEMON_LOG_BYTES = 10 * 1024 * 1024;

/**
 * Open a daemon's own log for appending, as the user who writes it (never root in the service user's directory):
 * past MAX_DAEMON_LOG_BYTES it is first renamed to `<file>.1`; a link, a file with a second name or another
 * user's file is refused. Returns the descriptor.
 */
export function openDaemonLog(path: string): number {
  try {
    if (statSync(path).size > MAX_DAEMON_LOG_BYTES) renameSync(path, `${path}.1`);
  } catch {
    // none yet
  }
  const fd = openSync(
    path,
    constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    0o600,
  );
  const stats = fstatSync(fd);
  if (!stats.isFile() || stats.nlink !== 1 || stats.uid !== process.getuid?.()) {
    closeSync(fd);
    throw new Error(`${path}: not a regular file of this user's with one name; not logging there`);
  }
  return fd;
}

/**
 * The same lines appended to a daemon's own log (openDaemonLog), one write each, the file renamed to `<file>.1`
 * and started again before a line would take it past MAX_DAEMON_LOG_BYTES. A write that fails (disk full) is
 * dropped, never thrown at the caller: the log is not worth the process Squid depends on.
 */
export function daemonLog(program: string, path: string): Log {
  let fd = openDaemonLog(path);
  let size = fstatSync(fd).size;
  return (line) => {
    const text = logLine(program, line);
    try {
      if (size > 0 && size + text.length > MAX_DAEMON_LOG_BYTES) {
        renameSync(path, `${path}.1`);
        closeSync(fd);
        fd = openDaemonLog(path);
        size = 0;
      }
      size += writeSync(fd, text);
    } catch {
      // dropped
    }
  };
}

export function stderrLog(program: string): Log {
  return (line) => {
    process.stderr.write(logLine(program, line));
  };
}

/**
 * The same lines, written once per turn of the event loop instead of once per line: for the web app, where a
 * synchronous write per request is a tenth of the cost of a login. Lines still leave within a millisecond or
 * so; flush() writes what is pending (at shutdown).
 */
export function bufferedStderrLog(program: string): Log & { flush(): void } {
  let pending = '';
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    if (pending === '') return;
    const out = pending;
    pending = '';
    process.stderr.write(out);
  };
  const log = (line: string) => {
    pending += `${new Date().toISOString()} ${program}[${process.pid}]: ${oneLine(line)}\n`;
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  return Object.assign(log, { flush });
}
