import { execFileSync } from 'node:child_process';
import {
  accessSync,
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  statSync,
} from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Config } from '../config/schema.ts';
import { dbPath } from '../config/load.ts';
import { DoormanError } from '../errors.ts';
import { trustedDirectoryPath } from '../fs/root-owned.ts';
import { processUser } from '../process-user.ts';

export interface Account {
  uid: number;
  gid: number;
}

/** Look a system user up through NSS (getent), so LDAP- or sssd-provided users work too. */
export function lookupUser(name: string): Account {
  let line: string;
  try {
    line = execFileSync('getent', ['passwd', name], { encoding: 'utf8' }).trim();
  } catch {
    throw new DoormanError(
      'PRIVILEGES',
      `serviceUser: no system user ${JSON.stringify(name)} (is Squid installed?)`,
    );
  }
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/**
 * Make the DB's directory private to the service user, then, if running as root, become that user, so every
 * file the DB creates (the DB, its -wal and -shm) belongs to the one account Squid's helpers run as, and
 * nobody else can read sessions or API-key hashes; then check that this user can reach the directory. Call
 * after binding privileged ports, before opening the DB. Not root: only create the directory (mode 0700) and go
 * on as the current user.
 */
export function becomeServiceUser(config: Config): void {
  dropPrivileges(config);
  checkStateDir(config);
}

/**
 * stateDir as root leaves it for the service user: made if missing (0700), below directories that are root's
 * alone (otherwise the service user could swap a name on the way between the check and the change), then owner
 * and mode set through a descriptor opened without following a link. Throws PRIVILEGES or UNSAFE_PATH.
 */
export function prepareStateDir(dir: string, account: Account): void {
  const parent = dirname(resolve(dir));
  mkdirSync(parent, { recursive: true, mode: 0o700 });
  trustedDirectoryPath(parent);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let fd: number;
  try {
    fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ELOOP' && code !== 'ENOTDIR') throw error;
    throw new DoormanError(
      'PRIVILEGES',
      `stateDir: ${dir} is not a directory (a symbolic link?); refusing to use it`,
    );
  }
  try {
    const stat = fstatSync(fd);
    if (stat.uid !== account.uid || stat.gid !== account.gid) fchownSync(fd, account.uid, account.gid);
    if ((stat.mode & 0o777) !== 0o700) fchmodSync(fd, 0o700);
  } finally {
    closeSync(fd);
  }
}

/**
 * The part of becomeServiceUser that needs root: prepare stateDir and switch to the service user. Without root
 * it only sets the umask. Whatever goes wrong here is fatal (a process must not go on as root); what goes wrong
 * after it (checkStateDir, opening the DB) may be fixed while `doorman serve` waits.
 */
export function dropPrivileges(config: Config): void {
  process.umask(0o077);
  if (process.getuid?.() !== 0) return;
  const account = lookupUser(config.serviceUser);
  // Root must not follow a link the service user planted in its own directory (doorman.db-wal -> /etc/shadow
  // would hand /etc/shadow to it): the directory and each DB file must be what they claim, and are changed
  // through a descriptor opened without following links.
  prepareStateDir(config.stateDir, account);
  // A DB once opened by root (an older Doorman, a manual sqlite3 session) would lock the service user out.
  for (const file of ['', '-wal', '-shm'].map((suffix) => dbPath(config) + suffix)) {
    const found = lstatSync(file, { throwIfNoEntry: false });
    if (found === undefined || found.uid === account.uid) continue;
    if (!found.isFile()) {
      throw new DoormanError(
        'PRIVILEGES',
        `${file} is not a regular file (a symbolic link?); refusing to use it`,
      );
    }
    const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      // A second name is a hard link the service user made to a file of root's: giving it away would give
      // that file away (where fs.protected_hardlinks is off).
      const opened = fstatSync(fd);
      if (!opened.isFile() || opened.nlink !== 1) {
        throw new DoormanError(
          'PRIVILEGES',
          `${file} is not a regular file with one name (a hard link?); refusing to use it`,
        );
      }
      fchownSync(fd, account.uid, account.gid);
    } finally {
      closeSync(fd);
    }
  }
  process.setgroups?.([account.gid]);
  process.setgid?.(account.gid);
  process.setuid?.(account.uid);
}

/**
 * stateDir exists (made, mode 0700, if missing) and the current user can list, enter and write it. Otherwise a
 * STORE_UNAVAILABLE error that says why: which directory on the way the user may not enter (say, a parent of
 * mode 0700 owned by root), rather than SQLite's "the directory does not exist".
 */
export function checkStateDir(config: Config): void {
  const dir = config.stateDir;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    accessSync(dir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new DoormanError('STORE_UNAVAILABLE', `stateDir: ${whyUnreachable(dir, error)}`, { cause: error });
  }
}

function whyUnreachable(dir: string, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  const who = processUser({ withUid: true, noun: 'user' });
  if (code !== 'EACCES' && code !== 'EPERM') return `${dir}: ${(error as Error).message}`;
  // From the root down: the first directory this user may not enter is the one to fix.
  const chain: string[] = [];
  for (let d = dirname(dir); ; d = dirname(d)) {
    chain.unshift(d);
    if (dirname(d) === d) break;
  }
  for (const d of chain) {
    if (canEnter(d)) continue;
    return `${dir} cannot be reached by ${who}: ${d} (${describe(d)}) does not let it in: allow it to search that directory (chmod o+x, or a group) or choose another stateDir`;
  }
  const found = statSync(dir, { throwIfNoEntry: false });
  if (found === undefined) {
    return `${dir} does not exist and ${who} may not create it in ${dirname(dir)} (${describe(dirname(dir))})`;
  }
  return `${dir} (${describe(dir)}) must be readable, writable and searchable by ${who}`;
}

function canEnter(dir: string): boolean {
  try {
    accessSync(dir, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** "mode 0700, owner uid 0", or why it could not be seen. */
function describe(path: string): string {
  try {
    const s = statSync(path);
    return `mode 0${(s.mode & 0o7777).toString(8)}, owner uid ${s.uid}`;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? 'cannot be examined';
  }
}
