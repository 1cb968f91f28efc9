import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './lab.ts';

/** The shim Squid runs for every helper (native/doorman-shim.c), as `npm run build` leaves it. */
export const SHIM = join(ROOT, 'dist', 'bin', 'doorman-shim');

/** What the shim answers while authd is down (past the hold). */
export const SHIM_DOWN = 'BH message=doorman%20auth%20service%20unavailable%2C%20see%20cache.log';

/** What the shim answers for a request authd left unanswered past the deadline. */
export const SHIM_LATE =
  'BH message=doorman%20auth%20service%20did%20not%20answer%20in%20time%2C%20see%20cache.log';

/** Compile the shim from this checkout's source (cc -Werror: a warning fails the caller too). */
export function buildShim(): void {
  execFileSync(join(ROOT, 'scripts', 'build-native.sh'));
}

/** The shim's test knobs (its defaults: hold 10 s, deadline 30 s). */
export interface ShimBounds {
  /** DOORMAN_SHIM_HOLD_MS: how long requests are held while authd is down. */
  readonly holdMs?: number;
  /** DOORMAN_SHIM_DEADLINE_MS: how long a request may go unanswered. */
  readonly deadlineMs?: number;
}

/** The shim driven over its pipes as Squid drives it: lines in, every output line kept in order. */
export class Shim {
  readonly child: ChildProcessWithoutNullStreams;
  readonly lines: string[] = [];
  stderr = '';
  /** Resolves with the exit code once the shim has exited and its output has all been read. */
  readonly closed: Promise<number | null>;
  #partial = '';
  #wake: () => void = () => {};

  constructor(socket: string, concurrent: boolean, bounds: ShimBounds = {}) {
    const env = { ...process.env };
    if (bounds.holdMs !== undefined) env.DOORMAN_SHIM_HOLD_MS = String(bounds.holdMs);
    if (bounds.deadlineMs !== undefined) env.DOORMAN_SHIM_DEADLINE_MS = String(bounds.deadlineMs);
    this.child = spawn(SHIM, [...(concurrent ? ['--concurrent'] : []), socket], { env });
    this.closed = new Promise((resolve) => this.child.once('close', resolve));
    this.child.stdin.on('error', () => {}); // a shim that has exited: what it was sent goes nowhere
    this.child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.child.stdout.on('data', (d: Buffer) => {
      const parts = (this.#partial + d.toString('latin1')).split('\n');
      this.#partial = parts.pop() ?? '';
      this.lines.push(...parts);
      this.#wake();
    });
  }

  send(text: string): void {
    this.child.stdin.write(text);
  }

  /** Resolves once `count` lines have come out in all (the test's timeout bounds the wait). */
  async until(count: number): Promise<string[]> {
    while (this.lines.length < count) await new Promise<void>((resolve) => (this.#wake = resolve));
    return this.lines.slice(0, count);
  }

  /** Send one line and resolve with the next line of output. */
  async ask(line: string): Promise<string> {
    const count = this.lines.length + 1;
    this.send(`${line}\n`);
    return (await this.until(count))[count - 1] as string;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Close stdin (as Squid does) and resolve with the exit code, once every line of output is in. */
  end(): Promise<number | null> {
    this.child.stdin.end();
    return this.closed;
  }

  kill(): void {
    if (this.alive) this.child.kill();
  }
}
