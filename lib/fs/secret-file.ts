import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { DoormanError } from '../errors.ts';
import { processUser } from '../process-user.ts';
import { readCappedFd } from './read-capped.ts';

/** A secret file's first line is a password or a token: a few KiB at most. */
const MAX_SECRET_FILE_BYTES = 4096;

/**
 * The first line of a secret file (store.passwordFile, metrics.tokenFile). A file that is not this process's
 * user's, or that anyone else can read or write, is refused. One descriptor is checked and then read, so what
 * was checked is what is read, whatever is renamed over the path meanwhile; O_NONBLOCK so a FIFO put there is
 * refused instead of waited on. Messages name the file (`what`, e.g. "the password file"), never what it holds.
 */
export function readSecretFile(path: string, what: string): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new DoormanError('UNSAFE_PATH', `${what} ${path} is not a regular file`);
    const uid = process.geteuid?.();
    if (uid !== undefined && stat.uid !== uid)
      throw new DoormanError(
        'UNSAFE_PATH',
        `${what} ${path} belongs to uid ${stat.uid}: it must be ${processUser({ withUid: true })}'s, the user Doorman runs as (chown it)`,
      );
    if ((stat.mode & 0o077) !== 0)
      throw new DoormanError(
        'UNSAFE_PATH',
        `${what} ${path} can be read or written by others (mode ${(stat.mode & 0o777).toString(8)}): chmod 600 it`,
      );
    const line = readCappedFd(fd, path, MAX_SECRET_FILE_BYTES).split('\n')[0] ?? '';
    return line.replace(/\r$/, '');
  } finally {
    closeSync(fd);
  }
}
