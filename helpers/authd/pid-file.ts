import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

/**
 * `<stateDir>/run/authd.pid`: the pid of the authd that made (or was handed) the sockets in that directory,
 * for `doorman authd stop|restart` and serve's supervisor. Not a lock: the sockets are (a second authd refuses
 * to start while one answers on them, listener.ts); the file only says whom to signal, and is believed only
 * for a live process whose command line is authd's (a pid reused by another program is never signalled).
 * Under systemd there is none: systemd knows its main pid.
 */
export function pidFilePath(runDirectory: string): string {
  return join(runDirectory, 'authd.pid');
}

/** Written whole under another name and renamed, so a reader never sees half a pid. */
export function writePidFile(path: string, pid: number): void {
  const tmp = `${path}.${pid}`;
  writeFileSync(tmp, `${pid}\n`, { mode: 0o644 });
  renameSync(tmp, path);
}

/** Removed only if it still names `pid` (a successor may have written its own already). */
export function removePidFile(path: string, pid: number): void {
  if (readPidFile(path) === pid) unlinkSync(path);
}

export function readPidFile(path: string): number | undefined {
  return readOwnedPidFile(path)?.pid;
}

/** The pid the file names and the file's owner (from its descriptor); undefined when there is none. */
function readOwnedPidFile(path: string): { pid: number; owner: number } | undefined {
  let text: string;
  let owner: number;
  try {
    // Capped: the run directory is the service user's, the file could be anything.
    const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      owner = fstatSync(fd).uid;
      const buf = Buffer.alloc(32);
      text = buf.toString('latin1', 0, readSync(fd, buf, 0, buf.length, 0));
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  const m = /^(\d{1,9})\n?$/.exec(text);
  return m === null ? undefined : { pid: Number(m[1]), owner };
}

/**
 * The live authd the pid file names, or undefined (no file, a dead pid, a pid now another program's, or a
 * process of another user than the one who wrote the file: whoever can write the run directory must not make
 * root signal a process of root's or of anyone else by naming it there).
 */
export function runningAuthd(path: string): number | undefined {
  const named = readOwnedPidFile(path);
  if (named === undefined || !isAuthd(named.pid)) return undefined;
  return uidOf(named.pid) === named.owner ? named.pid : undefined;
}

/** The real uid of a process (/proc/PID/status), or undefined when it is gone. */
function uidOf(pid: number): number | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'latin1');
    const m = /^Uid:\s+(\d+)/m.exec(status);
    return m === null ? undefined : Number(m[1]);
  } catch {
    return undefined;
  }
}

/** Whether `pid` is a live authd: its command line runs helpers/authd/main.js. */
export function isAuthd(pid: number): boolean {
  let cmdline: string;
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'latin1'); // the kernel's, a page or so
  } catch {
    return false;
  }
  return cmdline.split('\0').some((arg) => arg.endsWith('/helpers/authd/main.js'));
}
