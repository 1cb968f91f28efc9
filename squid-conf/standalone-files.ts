import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  openSync,
  realpathSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { DoormanError } from '../lib/errors.ts';
import type { Account } from '../lib/system/service-user.ts';

/**
 * The files of a standalone Squid (`doorman squid-conf --standalone DIR`), written safely when run as root.
 * Root must not be steered by another user: a DIR that user owns (or may write in) lets them plant
 * `DIR/logs -> /etc` (root would give /etc to Squid's user) or `DIR/squid.conf -> /etc/shadow` (root would
 * overwrite it), or swap in a squid.conf of their own that Squid then runs as root. So, as root, DIR must be a
 * real directory that root owns and only root may write, and nothing inside it is followed: `logs` is changed
 * through a descriptor opened without following links, each file is opened with O_NOFOLLOW and must be a plain
 * file of its own (one link, root's).
 */
export function prepareStandaloneDir(dir: string, squidUser: Account | undefined): void {
  const asRoot = isRoot();
  if (asRoot) checkAncestors(dir);
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const stat = lstatSync(dir);
  if (!stat.isDirectory()) {
    throw refuse(`${dir} is not a directory (a symbolic link?)`);
  }
  if (asRoot && stat.uid !== 0) {
    throw refuse(
      `${dir} belongs to uid ${stat.uid}, not root; run as root, Doorman writes only into a directory root owns`,
    );
  }
  if (asRoot && (stat.mode & 0o022) !== 0) {
    throw refuse(
      `${dir} may be written by others (mode 0${(stat.mode & 0o7777).toString(8)}); run as root, Doorman needs one only root may write (chmod go-w)`,
    );
  }
  const logs = join(dir, 'logs');
  try {
    mkdirSync(logs, { mode: 0o750 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  if (!lstatSync(logs).isDirectory()) throw refuse(`${logs} is not a directory (a symbolic link?)`);
  if (asRoot && squidUser !== undefined) {
    // Squid writes its logs as its own user (Debian: proxy), the same account Doorman's DB belongs to.
    const fd = openNoFollow(logs, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      fchownSync(fd, squidUser.uid, squidUser.gid);
    } finally {
      closeSync(fd);
    }
  }
}

/** Write `text` to `path` (created or replaced in place) with `mode`, never through a link. */
export function writeStandaloneFile(path: string, text: string, mode: number): void {
  const fd = openNoFollow(path, constants.O_WRONLY | constants.O_CREAT, mode);
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.nlink !== 1) {
      throw refuse(`${path} is not a plain file of its own (a hard link?)`);
    }
    if (isRoot() && stat.uid !== 0) throw refuse(`${path} belongs to uid ${stat.uid}, not root`);
    ftruncateSync(fd, 0);
    const bytes = Buffer.from(text, 'utf8');
    for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at, bytes.length - at, at);
    fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
}

function openNoFollow(path: string, flags: number, mode?: number): number {
  try {
    return openSync(path, flags | constants.O_NOFOLLOW, mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw refuse(`${path} is a symbolic link`);
    throw error;
  }
}

/**
 * No link anywhere in DIR's path, and every directory above it root's and writable only by root (or sticky,
 * as /tmp is, where nobody may rename what root made): otherwise another user could swap DIR, or a directory
 * on the way to it, for a link between our checks and our writes, and O_NOFOLLOW guards the last name only.
 */
function checkAncestors(dir: string): void {
  // Checked before anything is made: the part of the path that exists yet, and where DIR will be made in it.
  let existing = dir;
  while (lstatSync(existing, { throwIfNoEntry: false }) === undefined) existing = dirname(existing);
  if (realpathSync(existing) !== existing) throw refuse(`${dir} has a symbolic link in its path`);
  for (let parent = existing === dir ? dirname(dir) : existing; ; parent = dirname(parent)) {
    const stat = lstatSync(parent);
    const othersMayWrite = (stat.mode & 0o022) !== 0 && (stat.mode & 0o1000) === 0;
    if (stat.uid !== 0 || othersMayWrite) {
      throw refuse(
        `${parent}, above ${dir}, may be changed by others (owner uid ${stat.uid}, mode 0${(stat.mode & 0o7777).toString(8)}); ` +
          'choose a directory whose every parent only root may write',
      );
    }
    if (parent === dirname(parent)) return;
  }
}

const isRoot = (): boolean => process.getuid?.() === 0;

const refuse = (why: string): DoormanError =>
  new DoormanError('PRIVILEGES', `--standalone: ${why}; refusing to use it`);
