import { userInfo } from 'node:os';

/**
 * What processUser reads of the system: this process's effective uid, and the name NSS has for it
 * (os.userInfo, which throws for a uid without a passwd entry: a container's user, a deleted account).
 */
export interface UserSource {
  uid(): number | undefined;
  name(): string;
}

const systemUsers: UserSource = {
  // The effective uid: os.userInfo names that one, so the number and the name are the same user's.
  uid: () => process.geteuid?.(),
  name: () => userInfo().username,
};

/**
 * The OS user this process runs as, named for a message or the audit trail: its name ("proxy"); with `withUid`
 * its uid after it ("proxy (uid 13)"), with `noun` a word before it ("user proxy (uid 13)"). A user NSS has no
 * name for is "uid 13" whatever is asked: the uid says what it is, and nothing fails for want of a name.
 */
export function processUser(
  options: { withUid?: boolean; noun?: string } = {},
  users: UserSource = systemUsers,
): string {
  const uid = users.uid() ?? '?';
  let name: string;
  try {
    name = users.name();
  } catch {
    return `uid ${uid}`;
  }
  const named = options.noun === undefined ? name : `${options.noun} ${name}`;
  return options.withUid === true ? `${named} (uid ${uid})` : named;
}
