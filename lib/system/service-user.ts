import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  closeSync,
  constants,
  fchownSync,
  lstatSync,
  mkdirSync,
  openSync,
} from 'node:fs';
import type { Config } from '../config/schema.ts';
import { dbPath } from '../config/load.ts';
import { DoormanError } from '../errors.ts';

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
 * nobody else can read sessions or API-key hashes. Call after binding privileged ports, before opening the DB.
 * Not root: only create the directory (mode 0700) and go on as the current user.
 */
export function becomeServiceUser(config: Config): void {
  process.umask(0o077);
  const dir = config.stateDir;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (process.getuid?.() !== 0) return;
  const account = lookupUser(config.serviceUser);
  // Root must not follow a link the service user planted in its own directory (doorman.db-wal -> /etc/shadow
  // would hand /etc/shadow to it): the directory and each DB file must be what they claim, and are changed
  // through a descriptor opened without following links.
  const stat = lstatSync(dir);
  if (!stat.isDirectory()) {
    throw new DoormanError(
      'PRIVILEGES',
      `stateDir: ${dir} is not a directory (a symbolic link?); refusing to use it`,
    );
  }
  if (stat.uid !== account.uid || stat.gid !== account.gid) chownSync(dir, account.uid, account.gid);
  if ((stat.mode & 0o777) !== 0o700) chmodSync(dir, 0o700);
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
    const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      fchownSync(fd, account.uid, account.gid);
    } finally {
      closeSync(fd);
    }
  }
  process.setgroups?.([account.gid]);
  process.setgid?.(account.gid);
  process.setuid?.(account.uid);
}
