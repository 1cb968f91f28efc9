/**
 * One-line logs on stderr. For a helper, stderr is cache.log and stdout is Squid's; for the web app and CLI,
 * stderr is where operators look. Callers never pass secrets (passwords, keys, tickets) in.
 */
export type Log = (line: string) => void;

export function stderrLog(program: string): Log {
  return (line) => {
    process.stderr.write(`${new Date().toISOString()} ${program}[${process.pid}]: ${line}\n`);
  };
}
