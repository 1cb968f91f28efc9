import { showValue } from '../../errors.ts';
import { capText, FactError } from './errors.ts';

/**
 * Who may read the keytab and enter winbind's privileged pipe directory: the file's type, mode and owner (from
 * node:fs `stat`) against the helper user's uid and groups (from `id <user>`, which asks NSS, so a user from
 * LDAP counts too). Lab REPORT §6.5: good `root:proxy 640` keytab and `root:proxy 750` winbindd_privileged;
 * broken `chmod 600` (`klist: Permission denied while starting keytab scan`) and `chgrp root` on the directory
 * (`BH NT_STATUS_UNSUCCESSFUL` to the NTLM helper).
 */

export interface FileFacts {
  kind: 'file' | 'directory' | 'other';
  /** Permission bits only (07777). */
  mode: number;
  uid: number;
  gid: number;
}

export interface HelperUser {
  name: string;
  uid: number;
  /** The primary group. */
  gid: number;
  /** Every group the user is in, the primary one included. */
  gids: number[];
}

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const ID_MAX = 0xffffffff;

const isId = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= ID_MAX;

/** node:fs Stats (or anything with its `mode`, `uid`, `gid`) → FileFacts. */
export function fileFactsOf(stats: { mode: number; uid: number; gid: number }): FileFacts {
  const field = 'stat';
  for (const key of ['mode', 'uid', 'gid'] as const) {
    if (!isId(stats[key]))
      throw new FactError(
        'MALFORMED',
        field,
        `${key} ${String(stats[key])} is not a whole number of 32 bits`,
      );
  }
  const type = stats.mode & S_IFMT;
  return {
    kind: type === S_IFREG ? 'file' : type === S_IFDIR ? 'directory' : 'other',
    mode: stats.mode & 0o7777,
    uid: stats.uid,
    gid: stats.gid,
  };
}

/** `id` of a user in many groups is a few KiB; NSS limits a user to 65,536 groups. */
export const MAX_ID_OUTPUT_CHARS = 64 * 1024;

// `uid=13(proxy) gid=13(proxy) groups=13(proxy),4(adm)` (coreutils id, any locale: the keys are not translated).
// Names in parentheses hold no `)` here; each part is matched once from a fixed position: linear.
const UID_GID = /^uid=(\d{1,10})(?:\(([^)]*)\))? gid=(\d{1,10})(?:\([^)]*\))?(?: |$)/;
const GROUP = /(\d{1,10})(?:\([^)]*\))?(,|$)/y;

/** Parse `id <user>`'s one line. Throws FactError naming what is wrong. */
export function parseIdOutput(text: string): HelperUser {
  const field = 'id';
  capText(field, text, MAX_ID_OUTPUT_CHARS);
  const line = text.trim();
  const head = UID_GID.exec(line);
  if (head === null) {
    throw new FactError(
      'MALFORMED',
      field,
      `${showValue(line)} is not id's answer "uid=N(name) gid=N(name) groups=N(name),…"`,
    );
  }
  const [whole, uidText = '', name = '', gidText = ''] = head;
  const uid = Number(uidText);
  const gid = Number(gidText);
  if (!isId(uid) || !isId(gid))
    throw new FactError('MALFORMED', field, `${showValue(line)}: an id is larger than 32 bits`);
  const gids = [gid];
  const rest = line.slice(whole.length);
  if (rest !== '') {
    if (!rest.startsWith('groups=')) {
      throw new FactError('MALFORMED', field, `${showValue(line)}: after the gid only "groups=…" may follow`);
    }
    GROUP.lastIndex = 'groups='.length;
    for (;;) {
      const start = GROUP.lastIndex;
      const group = GROUP.exec(rest);
      if (group === null || group.index !== start) {
        throw new FactError(
          'MALFORMED',
          field,
          `${showValue(line)}: the groups are not a list "N(name),N(name)"`,
        );
      }
      const id = Number(group[1]);
      if (!isId(id))
        throw new FactError('MALFORMED', field, `${showValue(line)}: a group id is larger than 32 bits`);
      if (!gids.includes(id)) gids.push(id);
      if (group[2] === '') break;
    }
  }
  return { name, uid, gid, gids };
}

/** Which permission class applies to `user` for `file` (POSIX: the first that matches, even with fewer bits). */
export function permissionClass(file: FileFacts, user: HelperUser): 'owner' | 'group' | 'other' {
  if (file.uid === user.uid) return 'owner';
  if (user.gids.includes(file.gid)) return 'group';
  return 'other';
}

const SHIFT = { owner: 6, group: 3, other: 0 } as const;

/** Whether `user` may read (r), write (w) or search/execute (x) `file`; root may do all but execute nothing. */
export function mayAccess(file: FileFacts, user: HelperUser, access: 'r' | 'w' | 'x'): boolean {
  if (user.uid === 0) return access !== 'x' || (file.mode & 0o111) !== 0 || file.kind === 'directory';
  const bit = access === 'r' ? 4 : access === 'w' ? 2 : 1;
  return ((file.mode >> SHIFT[permissionClass(file, user)]) & bit) !== 0;
}

/** `0640` */
export function showMode(mode: number): string {
  return `0${(mode & 0o7777).toString(8).padStart(3, '0')}`;
}
