import { spawn } from 'node:child_process';

export interface RunResult {
  stdout: string;
  stderr: string;
  /** Exit code; `null` only when a signal ended the process. */
  code: number | null;
}

export interface RunOptions {
  /** Written to the command's stdin, which is then closed. */
  input?: string;
  env?: NodeJS.ProcessEnv;
  /** Resolve with the result even when the exit code is not 0 (tests that expect a failure). */
  allowFailure?: boolean;
}

/**
 * Run a command to its end and collect its output. Rejects on a non-zero exit (unless `allowFailure`), with
 * the command line and its stderr in the message: setup failures must say what failed.
 */
export function run(command: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) => {
      const result = {
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        code,
      };
      if (code === 0 || options.allowFailure) resolve(result);
      else
        reject(
          new Error(
            `${command} ${args.join(' ')} exited with ${code}\n${result.stderr}${result.stdout}`.trim(),
          ),
        );
    });
    child.stdin.on('error', () => {}); // a command that exits without reading its input is not our failure
    child.stdin.end(options.input ?? '');
  });
}
