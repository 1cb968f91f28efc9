import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './lab.ts';

/** The pinned Node that Squid is told to start helpers with. */
export const NODE = join(ROOT, 'node_modules', 'node', 'bin', 'node');

/**
 * A helper program driven over its pipes the way Squid drives it: requests with channel-IDs, answers matched
 * by channel. Everything it writes to stdout must be an answer; stderr is kept for assertions.
 */
export class HelperProcess {
  readonly child: ChildProcessWithoutNullStreams;
  #stdout = '';
  #stderr = '';
  #next = 0;
  readonly #waiting = new Map<string, (line: string) => void>();

  constructor(script: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env) {
    this.child = spawn(NODE, [join(ROOT, 'dist', 'helpers', script), ...args], { env });
    this.child.stderr.on('data', (d: Buffer) => (this.#stderr += d.toString()));
    this.child.stdout.on('data', (d: Buffer) => {
      this.#stdout += d.toString();
      let nl: number;
      while ((nl = this.#stdout.indexOf('\n')) >= 0) {
        const line = this.#stdout.slice(0, nl);
        this.#stdout = this.#stdout.slice(nl + 1);
        const channel = line.split(' ', 1)[0] ?? '';
        const resolve = this.#waiting.get(channel);
        if (resolve === undefined) throw new Error(`unexpected helper output: ${line}`);
        this.#waiting.delete(channel);
        resolve(line.slice(channel.length + 1));
      }
    });
  }

  /** Send one request (fields already URL-escaped as Squid would); resolves with the answer after the channel. */
  ask(fields: string): Promise<string> {
    const channel = String(this.#next++);
    const answer = new Promise<string>((resolve) => this.#waiting.set(channel, resolve));
    this.child.stdin.write(`${channel} ${fields}\n`);
    return answer;
  }

  get stderr(): string {
    return this.#stderr;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Close stdin and wait for a clean exit; resolves with the exit code. */
  async end(): Promise<number | null> {
    if (!this.alive) return this.child.exitCode;
    const exited = new Promise<number | null>((resolve) => this.child.once('exit', (code) => resolve(code)));
    this.child.stdin.end();
    return exited;
  }
}
