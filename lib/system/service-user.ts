import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
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
  const dir = dirname(dbPath(config));
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (process.getuid?.() !== 0) return;
  const account = lookupUser(config.serviceUser);
  const stat = statSync(dir);
  if (stat.uid !== account.uid || stat.gid !== account.gid) chownSync(dir, account.uid, account.gid);
  if ((stat.mode & 0o777) !== 0o700) chmodSync(dir, 0o700);
  // A DB once opened by root (an older Doorman, a manual sqlite3 session) would lock the service user out.
  for (const file of ['', '-wal', '-shm'].map((suffix) => dbPath(config) + suffix)) {
    if (existsSync(file) && statSync(file).uid !== account.uid) chownSync(file, account.uid, account.gid);
  }
  process.setgroups?.([account.gid]);
  process.setgid?.(account.gid);
  process.setuid?.(account.uid);
}
