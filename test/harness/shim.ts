import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './lab.ts';

/** The shim Squid runs for every helper (native/doorman-shim.c), as `npm run build` leaves it. */
export const SHIM = join(ROOT, 'dist', 'bin', 'doorman-shim');

/** What the shim answers while authd is down. */
export const SHIM_DOWN = 'BH message=doorman%20auth%20service%20unavailable%2C%20see%20cache.log';

/** Compile the shim from this checkout's source (cc -Werror: a warning fails the caller too). */
export function buildShim(): void {
  execFileSync(join(ROOT, 'scripts', 'build-native.sh'));
}

/** The shim driven over its pipes as Squid drives it: lines in, every output line kept in order. */
export class Shim {
  readonly child: ChildProcessWithoutNullStreams;
  readonly lines: string[] = [];
  stderr = '';
  #partial = '';
  #wake: () => void = () => {};

  constructor(socket: string, concurrent: boolean) {
    this.child = spawn(SHIM, [...(concurrent ? ['--concurrent'] : []), socket]);
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

  /** Close stdin (as Squid does) and resolve with the exit code. */
  async end(): Promise<number | null> {
    if (!this.alive) return this.child.exitCode;
    const exited = new Promise<number | null>((resolve) => this.child.once('exit', resolve));
    this.child.stdin.end();
    return exited;
  }

  kill(): void {
    if (this.alive) this.child.kill();
  }
}
