import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NODE } from './helper-process.ts';
import { ROOT } from './lab.ts';

/** What serve starts: the compiled authd (npm test builds it first). */
export const AUTHD = join(ROOT, 'dist', 'helpers', 'authd', 'main.js');

/** A config naming `stateDir` alone, written there; returns its path. */
export function authdConfig(stateDir: string): string {
  const path = join(stateDir, 'doorman.json');
  writeFileSync(path, JSON.stringify({ stateDir }));
  return path;
}

/** authd as serve starts it, with its stderr kept; `listening` resolves once its sockets are up. */
export class AuthdProcess {
  readonly child: ChildProcessWithoutNullStreams;
  stderr = '';
  readonly listening: Promise<void>;
  readonly exited: Promise<number | null>;

  constructor(config: string, extra: readonly string[] = []) {
    this.child = spawn(NODE, ['--max-semi-space-size=2', AUTHD, '--config', config, ...extra]);
    this.exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.listening = new Promise((resolve, reject) => {
      this.child.stderr.on('data', (d: Buffer) => {
        this.stderr += d.toString();
        if (this.stderr.includes('listening in ')) resolve();
      });
      void this.exited.then((code) => reject(new Error(`authd exited with ${code}: ${this.stderr}`)));
    });
  }

  /** SIGCONT (a stopped one cannot die) and SIGKILL, if it still runs. */
  kill(): void {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGCONT');
    this.child.kill('SIGKILL');
  }
}
