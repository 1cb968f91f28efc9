import { spawn } from 'node:child_process';

/**
 * How the domain steps run Samba's tools (net, winbindd, wbinfo, id): one injected function, so the step logic
 * is tested against a fake that records every call and answers as net would, and the real one is one small
 * shell around child_process.spawn.
 *
 * A secret (the administrator's password) only ever travels as `stdin`: never in argv (any local user reads
 * /proc/<pid>/cmdline) nor in the environment (PASSWD is readable in /proc/<pid>/environ, and inherited).
 * The real runner zeroes the Buffer once the child has taken it; the caller zeroes its own copy.
 */
export interface RunRequest {
  command: string;
  args: readonly string[];
  /** Written to the child's stdin, which is then closed; zeroed afterwards. Without it stdin is empty. */
  stdin?: Buffer;
  /** Variables added to the child's environment (KRB5_CONFIG…). */
  env?: Readonly<Record<string, string>>;
  /** Kill the child after this long (default 60 s). */
  timeoutMs?: number;
}

export interface RunOutcome {
  /** The exit code; null when a signal ended it or it never started. */
  code: number | null;
  stdout: string;
  stderr: string;
  /** Why it could not be started or was killed: `ENOENT`, `timed out after 60000 ms`. */
  error?: string;
}

export type CommandRunner = (request: RunRequest) => Promise<RunOutcome>;

/** Output beyond this is cut: net's answers are a few lines, and a runaway child must not fill memory. */
export const MAX_OUTPUT_BYTES = 256 * 1024;
export const DEFAULT_TIMEOUT_MS = 60_000;

/** Variables a Samba tool would read a password or a user from: never passed on from our own environment. */
const SCRUBBED = ['PASSWD', 'PASSWD_FD', 'PASSWD_FILE', 'LIBSMB_PROG'];

/** A password as the one line net reads from a stdin that is not a terminal. The caller zeroes both Buffers. */
export function passwordLine(password: Buffer): Buffer {
  const line = Buffer.alloc(password.length + 1);
  password.copy(line);
  line[password.length] = 0x0a;
  return line;
}

export const spawnRunner: CommandRunner = (request) =>
  new Promise((resolve) => {
    const env: NodeJS.ProcessEnv = Object.fromEntries(
      Object.entries({ ...process.env, ...request.env }).filter(([name]) => !SCRUBBED.includes(name)),
    );
    const child = spawn(request.command, request.args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let error: string | undefined;
    child.stdout.on('data', (chunk: Buffer) => {
      if (outBytes < MAX_OUTPUT_BYTES) out.push(chunk);
      outBytes += chunk.length;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (errBytes < MAX_OUTPUT_BYTES) err.push(chunk);
      errBytes += chunk.length;
    });
    const timeoutMs = request.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const timer = setTimeout(() => {
      error = `timed out after ${timeoutMs} ms`;
      child.kill('SIGKILL');
    }, timeoutMs);
    const zero = () => request.stdin?.fill(0);
    child.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      zero();
      resolve({
        code,
        stdout: Buffer.concat(out).subarray(0, MAX_OUTPUT_BYTES).toString('utf8'),
        stderr: Buffer.concat(err).subarray(0, MAX_OUTPUT_BYTES).toString('utf8'),
        ...(error === undefined ? {} : { error }),
      });
    });
    // A child that exits without reading its input is not our failure.
    child.stdin.on('error', () => {});
    if (request.stdin === undefined) child.stdin.end();
    else child.stdin.end(request.stdin, zero);
  });

/** `net ads join: rc 255: Failed to join domain: …` — a command's failure in one line for a step's detail. */
export function describeFailure(request: Pick<RunRequest, 'command' | 'args'>, outcome: RunOutcome): string {
  const name = [request.command, ...request.args.filter((a) => !a.startsWith('-')).slice(0, 2)].join(' ');
  const how = outcome.error ?? `exit code ${outcome.code ?? 'none (killed by a signal)'}`;
  const said = lastLines(`${outcome.stderr}\n${outcome.stdout}`, 3);
  return `${name} failed (${how})${said === '' ? '' : `: ${said}`}`;
}

/** The last `n` non-empty lines of `text`, joined with " / ", at most 600 characters. */
export function lastLines(text: string, n: number): string {
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const joined = lines.slice(-n).join(' / ');
  return joined.length > 600 ? `…${joined.slice(-600)}` : joined;
}
