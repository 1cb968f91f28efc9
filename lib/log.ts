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

export function stderrLog(program: string): Log {
  return (line) => {
    process.stderr.write(`${new Date().toISOString()} ${program}[${process.pid}]: ${oneLine(line)}\n`);
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
