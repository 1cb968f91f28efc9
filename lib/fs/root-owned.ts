import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  realpathSync,
  renameSync,
  rmSync,
  type Stats,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { open } from 'node:fs/promises';
import { basename, dirname, join, sep } from 'node:path';
import { randomBytes } from 'node:crypto';
import { DoormanError } from '../errors.ts';

/**
 * What root does in a directory of its own (Samba's member state, the keytab): nothing here follows a symbolic
 * link or trusts an entry root did not make. A directory is trusted only when it and every directory above it
 * belong to root and nobody else can write them (a sticky, root-owned /tmp counts: there others cannot rename
 * or remove root's entries). Inside such a tree only root can plant anything, so a check at the top holds for
 * the whole operation; the O_NOFOLLOW opens and the descriptor checks below make each step safe even so.
 *
 * Errors are DoormanError UNSAFE_PATH with the path and what is wrong with it, so the admin sees what to fix.
 */

const S_ISVTX = 0o1000;
// libuv opens every descriptor close-on-exec already.
const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK } = constants;

const unsafe = (path: string, why: string): DoormanError =>
  new DoormanError('UNSAFE_PATH', `${path} ${why}; root will not use it (see docs/security.md)`);

const describeOwner = (stats: Stats): string =>
  `owner uid ${stats.uid}, mode ${(stats.mode & 0o7777).toString(8).padStart(4, '0')}`;

/** Why a directory root is about to trust is not root's alone, or undefined when it is. */
function untrustedDirectory(stats: Stats): string | undefined {
  if (stats.isSymbolicLink()) return 'is a symbolic link';
  if (!stats.isDirectory()) return 'is not a directory';
  if (stats.uid !== 0) return `is not root's (${describeOwner(stats)})`;
  if ((stats.mode & 0o022) !== 0 && (stats.mode & S_ISVTX) === 0)
    return `can be written by others than root (${describeOwner(stats)})`;
  return undefined;
}

/**
 * The path of `dir` with no symbolic link left in it, once every directory on it is root's alone (untrustedDirectory).
 * `dir` itself need not exist yet (its parent must). Use the returned path from then on: a link met on the way
 * may change later, the directories it led to cannot.
 */
export function trustedDirectoryPath(dir: string): string {
  const parent = realpathSync(dirname(dir));
  const resolved = join(parent, basename(dir));
  let at: string = sep;
  for (const part of resolved.split(sep).filter((p) => p !== '')) {
    const why = untrustedDirectory(lstatSync(at));
    if (why !== undefined) throw unsafe(at, why);
    at = join(at, part);
  }
  const last = lstatSync(resolved, { throwIfNoEntry: false });
  if (last !== undefined) {
    const why = untrustedDirectory(last);
    if (why !== undefined) throw unsafe(resolved, why);
  }
  return resolved;
}

/** Open a directory without following a link; the caller closes it. */
function openDirectory(path: string): number {
  return openSync(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
}

/**
 * `path` as a directory of root's with this group and mode: made if missing (its parent must be trusted), else
 * refused unless it is a real directory root owns; owner and mode set on the open descriptor.
 */
export function ensureRootDirectory(path: string, mode: number, gid = 0): void {
  try {
    mkdirSync(path, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  let fd: number;
  try {
    fd = openDirectory(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') throw unsafe(path, 'is not a directory (a symbolic link?)');
    throw error;
  }
  try {
    const stats = fstatSync(fd);
    if (stats.uid !== 0) throw unsafe(path, `was not made by root (${describeOwner(stats)})`);
    fchownSync(fd, 0, gid);
    fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
}

/**
 * Write `path` (in a trusted directory) whole or not at all: a new file of root's under a name nobody else can
 * have made (O_EXCL, O_NOFOLLOW), owner and mode set on its descriptor before it takes the name by rename.
 */
export function writeRootFile(path: string, content: string | Uint8Array, mode: number, gid = 0): void {
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const fd = openSync(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
  try {
    try {
      const bytes = typeof content === 'string' ? Buffer.from(content, 'utf8') : content;
      for (let written = 0; written < bytes.length;) {
        written += writeSync(fd, bytes, written, bytes.length - written);
      }
      fchownSync(fd, 0, gid);
      fchmodSync(fd, mode);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/**
 * Give a file or directory that root's daemon made (winbindd's privileged pipe directory) this group and mode,
 * on its descriptor, after checking it is a real entry of root's and of the kind expected.
 */
export function setRootEntryAccess(
  path: string,
  kind: 'file' | 'directory',
  mode: number,
  gid: number,
): void {
  let fd: number;
  try {
    fd = openSync(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | (kind === 'directory' ? O_DIRECTORY : 0));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR') throw unsafe(path, `is not a ${kind} (a symbolic link?)`);
    throw error;
  }
  try {
    const stats = fstatSync(fd);
    if (kind === 'file' && !stats.isFile()) throw unsafe(path, 'is not a regular file');
    if (stats.uid !== 0) throw unsafe(path, `was not made by root (${describeOwner(stats)})`);
    fchownSync(fd, 0, gid);
    fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
}

/**
 * Remove every entry of a trusted directory but those named in `keep`; returns the names removed. rmSync
 * removes a link inside rather than what it points to, and in a trusted tree only root's entries exist.
 */
export function removeRootEntries(dir: string, keep: readonly string[]): string[] {
  const trusted = trustedDirectoryPath(dir);
  let names: string[];
  try {
    names = readdirSync(trusted);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const removed: string[] = [];
  for (const name of names) {
    if (keep.includes(name)) continue;
    const entry = join(trusted, name);
    if (lstatSync(entry).isDirectory()) rmSync(entry, { recursive: true, force: true });
    else unlinkSync(entry);
    removed.push(name);
  }
  return removed;
}

/**
 * A regular file's bytes, at most `maxBytes`: opened without following a link (and without waiting on a FIFO),
 * its type and size checked on the descriptor before anything is read, and never more than maxBytes + 1 bytes
 * read (it may grow meanwhile). Errors name the path; the file system's own (ENOENT…) pass as they are.
 */
export async function readRegularFileCapped(path: string, maxBytes: number): Promise<Buffer> {
  let handle;
  try {
    handle = await open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw unsafe(path, 'is a symbolic link');
    throw error;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw unsafe(path, 'is not a regular file');
    const tooLarge = () =>
      new DoormanError('TOO_LARGE', `${path} is larger than ${maxBytes} bytes; refusing to read it`);
    if (stats.size > maxBytes) throw tooLarge();
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > maxBytes) throw tooLarge();
    }
    return buffer.subarray(0, length);
  } finally {
    await handle.close();
  }
}
