import { createRequire } from 'node:module';
import type { Log } from '../log.ts';

/**
 * The service manager's readiness and watchdog protocol (sd_notify(3)): datagrams such as "READY=1" or
 * "WATCHDOG=1" sent to the AF_UNIX datagram socket named by NOTIFY_SOCKET. Node has no datagram Unix sockets,
 * so the sending is done by the `unix-dgram` addon (a kept npm package, built by `npm ci` like `kerberos`);
 * it sends from this process itself, so the unit needs no NotifyAccess=all and systemd never has to attribute a
 * message from a short-lived helper process (a race that systemd-notify(1) is known for).
 */
export interface Notifier {
  /** Send one state ("READY=1", "STOPPING=1", "WATCHDOG=1", "STATUS=..."); failures are logged once. */
  notify(state: string): void;
  close(): void;
}

/**
 * NOTIFY_SOCKET as sd_notify reads it: an absolute path, or "@name" for the abstract namespace (which the
 * addon cannot address: refused with a reason). undefined: no service manager asked for notifications.
 */
export function notifySocketOf(env: NodeJS.ProcessEnv): { path: string } | { error: string } | undefined {
  const value = env.NOTIFY_SOCKET;
  if (value === undefined || value === '') return undefined;
  if (value.startsWith('/')) return { path: value };
  return { error: `NOTIFY_SOCKET=${JSON.stringify(value)}: only a socket path is supported` };
}

/**
 * The watchdog interval systemd expects pings within (WatchdogSec=), from WATCHDOG_USEC, when WATCHDOG_PID is
 * unset or this process's: undefined when no watchdog is set for this process.
 */
export function watchdogUsecOf(env: NodeJS.ProcessEnv, pid: number): number | undefined {
  const usec = Number(env.WATCHDOG_USEC);
  if (env.WATCHDOG_USEC === undefined || !Number.isSafeInteger(usec) || usec <= 0) return undefined;
  if (env.WATCHDOG_PID !== undefined && Number(env.WATCHDOG_PID) !== pid) return undefined;
  return usec;
}

interface DgramSocket {
  on(event: 'error', listener: (error: Error) => void): void;
  send(buf: Buffer, offset: number, length: number, path: string, callback?: (error?: Error) => void): void;
  close(): void;
}

/**
 * A notifier for NOTIFY_SOCKET, or undefined when it is unset. The variables are removed from the
 * environment (as sd_notify's unset_environment does) so that a child process never notifies in our name.
 */
export function systemdNotifier(log: Log, env: NodeJS.ProcessEnv = process.env): Notifier | undefined {
  const where = notifySocketOf(env);
  delete env.NOTIFY_SOCKET;
  if (where === undefined) return undefined;
  if ('error' in where) {
    log(`${where.error}; not notifying the service manager`);
    return undefined;
  }
  const require = createRequire(import.meta.url);
  const unix = require('unix-dgram') as { createSocket(type: 'unix_dgram'): DgramSocket };
  const socket = unix.createSocket('unix_dgram');
  let failed = false;
  const fail = (error: Error) => {
    if (!failed) log(`cannot notify the service manager at ${where.path}: ${error.message}`);
    failed = true;
  };
  socket.on('error', fail);
  return {
    notify(state) {
      const buf = Buffer.from(state);
      socket.send(buf, 0, buf.length, where.path, (error) => {
        if (error) fail(error);
      });
    },
    close: () => socket.close(),
  };
}
