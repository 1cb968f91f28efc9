import { execFile } from 'node:child_process';
import { showValue } from '../errors.ts';

/** How `ip` ended: its exit code and output. */
export interface IpResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs iproute2's `ip` with these arguments. Resolves with how it ended, a non-zero exit included; rejects, with a
 * message saying why, when it could not run to its end (not installed, timed out, output over the cap, too
 * many already running).
 */
export type IpRunner = (args: readonly string[]) => Promise<IpResult>;

export interface IpRunnerOptions {
  /** Default `ip`, found on PATH (/usr/bin or /usr/sbin, depending on the distribution). */
  command?: string;
  /** Default 2 s: `ip` answers in milliseconds; a hung one must not hold a request. */
  timeoutMs?: number;
  /** Bytes of stdout (and of stderr) at most; default 1 MiB (a whole neighbour table of ~10,000 entries). */
  maxBuffer?: number;
}

export const DEFAULT_IP_TIMEOUT_MS = 2000;
export const DEFAULT_IP_MAX_BUFFER = 1024 * 1024;

/** The real runner: execFile, no shell (the arguments are never parsed by one), asynchronous. */
export function execIp(options: IpRunnerOptions = {}): IpRunner {
  const command = options.command ?? 'ip';
  const timeout = options.timeoutMs ?? DEFAULT_IP_TIMEOUT_MS;
  const maxBuffer = options.maxBuffer ?? DEFAULT_IP_MAX_BUFFER;
  return (args) =>
    new Promise((resolve, reject) => {
      execFile(command, args, { timeout, maxBuffer, encoding: 'utf8' }, (error, stdout, stderr) => {
        if (error === null) return resolve({ code: 0, stdout, stderr });
        const line = `${command} ${args.join(' ')}`;
        if (error.code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER') {
          return reject(new Error(`${line}: output over ${maxBuffer} bytes`, { cause: error }));
        }
        if (error.killed === true || error.signal != null) {
          const why = error.killed === true ? `timed out after ${timeout} ms` : `killed by ${error.signal}`;
          return reject(new Error(`${line}: ${why}`, { cause: error }));
        }
        if (typeof error.code === 'number') return resolve({ code: error.code, stdout, stderr });
        if (error.code === 'ENOENT') {
          return reject(
            new Error(`${line}: ${command} not found (is iproute2 installed?)`, { cause: error }),
          );
        }
        reject(new Error(`${line}: ${error.message}`, { cause: error }));
      });
    });
}

export interface IpCap {
  /** `ip` processes running at once, at most. */
  running: number;
  /** Runs waiting for a free slot, at most; one more is refused at once. */
  waiting: number;
}

/** Two at once: a lookup's `ip` answers in milliseconds, so a queue drains fast; 64 waiting is ~100 ms of work. */
export const DEFAULT_IP_CAP: IpCap = { running: 2, waiting: 64 };

/**
 * `run` with a cap on the processes it starts at once, whoever asks: a client taking a fresh IPv6 address for
 * every request must not start a process for each. Past `waiting` queued runs the call rejects, saying so (a
 * lookup failure: not remembered, so the next request tries again).
 */
export function cappedIp(run: IpRunner, cap: IpCap = DEFAULT_IP_CAP): IpRunner {
  let running = 0;
  const queue: Array<() => void> = [];
  // A finished run hands its slot straight to the first waiter, so a newcomer cannot take it in between.
  const release = () => {
    const next = queue.shift();
    if (next === undefined) running--;
    else next();
  };
  return async (args) => {
    if (running < cap.running) {
      running++;
    } else {
      if (queue.length >= cap.waiting) {
        throw new Error(
          `ip ${args.join(' ')}: not started, ${cap.running} ip processes running and ${cap.waiting} waiting`,
        );
      }
      await new Promise<void>((resolve) => queue.push(resolve));
    }
    try {
      return await run(args);
    } finally {
      release();
    }
  };
}

/** "ip neigh show exited with 1: <ip's first line of stderr>". */
export function exitWhy(what: string, result: IpResult): string {
  const stderr = firstLine(result.stderr);
  return `${what} exited with ${result.code}${stderr === '' ? '' : `: ${stderr}`}`;
}

/** ip's own message, bounded and with control characters made visible (it ends up in logs). */
export function firstLine(text: string): string {
  const line = (text.split('\n', 1)[0] ?? '').trim();
  return line === '' ? '' : showValue(line, 200).slice(1, -1);
}
