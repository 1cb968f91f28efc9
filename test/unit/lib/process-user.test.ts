import { userInfo } from 'node:os';
import { describe, expect, it } from 'vitest';
import { processUser, type UserSource } from '../../../lib/process-user.ts';

const proxy: UserSource = { uid: () => 13, name: () => 'proxy' };
// What os.userInfo does for a uid without a passwd entry.
const nameless: UserSource = {
  uid: () => 4242,
  name: () => {
    throw new Error('ENOENT: no such file or directory, uv_os_get_passwd');
  },
};

describe('processUser', () => {
  it('names a user by its name, with its uid after it, and a noun before it, when asked', () => {
    expect(processUser({}, proxy)).toBe('proxy');
    expect(processUser({ withUid: true }, proxy)).toBe('proxy (uid 13)');
    expect(processUser({ withUid: true, noun: 'user' }, proxy)).toBe('user proxy (uid 13)');
  });

  it('names a user NSS has no name for by its uid alone, whatever is asked', () => {
    expect(processUser({}, nameless)).toBe('uid 4242');
    expect(processUser({ withUid: true }, nameless)).toBe('uid 4242');
    expect(processUser({ withUid: true, noun: 'user' }, nameless)).toBe('uid 4242');
  });

  it('says "uid ?" where the system has no uids', () => {
    expect(processUser({}, { uid: () => undefined, name: nameless.name })).toBe('uid ?');
  });

  it('reads this process: its effective uid and the name the system has for it', () => {
    expect(processUser()).toBe(userInfo().username);
    expect(processUser({ withUid: true })).toBe(`${userInfo().username} (uid ${process.geteuid?.()})`);
  });
});
