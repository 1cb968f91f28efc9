import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { connect } from 'node:net';

/**
 * A port nobody listens on right now (the kernel's choice on `host`), free on `alsoOn` too: the lab's servers
 * listen on one port on both 127.0.0.1 and ::1, and the kernel hands out IPv4 and IPv6 ports separately.
 */
export async function freePort(host = '127.0.0.1', alsoOn: readonly string[] = ['::1']): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, host, resolve));
    const { port } = server.address() as { port: number };
    const others = await Promise.all(alsoOn.map((other) => canListen(other, port)));
    await new Promise((resolve) => server.close(resolve));
    if (others.every(Boolean) || attempt === 20) return port;
  }
}

function canListen(host: string, port: number): Promise<boolean> {
  const probe = createServer();
  return new Promise((resolve) => {
    probe.once('error', () => resolve(false));
    probe.listen(port, host, () => probe.close(() => resolve(true)));
  });
}

/** Resolve once something accepts TCP connections on host:port; reject after timeoutMs. */
export async function waitForPort(
  host: string,
  port: number,
  timeoutMs = 10_000,
  child?: ChildProcess,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child && child.exitCode !== null)
      throw new Error(`process exited with ${child.exitCode} before listening on ${port}`);
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect({ host, port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on ${host}:${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Resolve once `path` exists (a socket a server made, say); reject after timeoutMs. */
export async function waitForFile(path: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`${path} did not appear in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export interface Started {
  child: ChildProcess;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  /** SIGKILL and wait for the exit (tests tear down by PID, fast). */
  stop(): Promise<void>;
}

export function start(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Started {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  child.stdout?.resume();
  return {
    child,
    stderr: () => err,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/**
 * SIGTERM, then stop() if it has not exited within `graceMs`: for a process that stops what it started (serve
 * stops authd and its root child), which SIGKILL would leave behind.
 */
export async function terminate(started: Started, graceMs = 10_000): Promise<void> {
  const { child } = started;
  if (child.exitCode === null && child.signalCode === null) {
    let timer: NodeJS.Timeout | undefined;
    const ended = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await Promise.race([ended, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }
  await started.stop();
}
