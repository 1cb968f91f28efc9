import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import type { HelperKind } from '../../lib/seamless/paths.ts';
import { FIRST_LISTEN_FD, handoverValue } from './listen-fds.ts';

/**
 * A planned restart without a service manager: authd starts its successor with the listening sockets
 * inherited (DOORMAN_LISTEN_FDS, listen-fds.ts) and a pipe on which the successor says READY once it answers
 * (main.ts --ready-fd). Only then does the caller stop accepting and finish what it has read; connections
 * queued meanwhile wait in the sockets' backlog, which both processes share. The successor runs in a session of
 * its own (detached): it must outlive this process and whatever terminal or supervisor started it.
 */
export interface SuccessorOptions {
  /** The Node binary, its options (--max-semi-space-size) and authd's script: this process's own. */
  execPath: string;
  execArgv: readonly string[];
  script: string;
  /** authd's arguments (--config FILE), without --ready-fd. */
  args: readonly string[];
  env: NodeJS.ProcessEnv;
  /** Each kind's listening descriptor in this process. */
  sockets: ReadonlyMap<HelperKind, number>;
  /** The successor must be ready within this long, or it is killed and this process goes on serving. */
  readyTimeoutMs: number;
}

export type SuccessorResult = { ok: true; pid: number } | { ok: false; reason: string };

/** The descriptor the successor writes READY=1 on. */
const READY_FD = FIRST_LISTEN_FD;

export function startSuccessor(options: SuccessorOptions): Promise<SuccessorResult> {
  const kinds = [...options.sockets.keys()];
  // The successor's descriptors: the ready pipe at 3, then one per socket from 4, in this order.
  const inSuccessor = new Map(kinds.map((kind, i) => [kind, READY_FD + 1 + i]));
  const child = spawn(
    options.execPath,
    [...options.execArgv, options.script, ...options.args, '--ready-fd', String(READY_FD)],
    {
      env: { ...options.env, DOORMAN_LISTEN_FDS: handoverValue(inSuccessor) },
      stdio: ['ignore', 'ignore', 'inherit', 'pipe', ...kinds.map((k) => options.sockets.get(k) as number)],
      detached: true,
    },
  );
  const ready = child.stdio[READY_FD] as Readable;
  return new Promise<SuccessorResult>((resolve) => {
    let said = '';
    const finish = (result: SuccessorResult) => {
      clearTimeout(timer);
      child.off('exit', onExit);
      ready.destroy();
      if (!result.ok && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      child.unref();
      resolve(result);
    };
    const onExit = (code: number | null, signal: string | null) =>
      finish({ ok: false, reason: `the successor exited (${signal ?? `code ${code}`}) before it was ready` });
    const timer = setTimeout(
      () => finish({ ok: false, reason: `the successor was not ready within ${options.readyTimeoutMs} ms` }),
      options.readyTimeoutMs,
    );
    child.once('error', (error) =>
      finish({ ok: false, reason: `cannot start a successor: ${error.message}` }),
    );
    child.once('exit', onExit);
    ready.on('data', (chunk: Buffer) => {
      said = (said + chunk.toString('latin1')).slice(0, 64);
      if (said.includes('READY=1\n')) finish({ ok: true, pid: child.pid as number });
    });
  });
}
