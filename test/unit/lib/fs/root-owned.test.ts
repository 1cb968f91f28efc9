import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ensureRootDirectory,
  readRegularFileCapped,
  removeRootEntries,
  setRootEntryAccess,
  trustedDirectoryPath,
  writeRootFile,
} from '../../../../lib/fs/root-owned.ts';
import { useTempDir } from '../../../support/temp-dir.ts';
import { rejection, thrown } from '../../../support/thrown.ts';

// These run as root (as the tests and CI do): they are about what root refuses.
const tmp = useTempDir('doorman-root-owned-');
const NOBODY = 65534;

const codeAndMessage = (error: unknown) => {
  const e = error as { code?: string; message?: string };
  return `${e.code}: ${e.message}`;
};

describe('trustedDirectoryPath', () => {
  it('gives the path with links resolved when every directory on it is root’s alone', () => {
    mkdirSync(join(tmp.dir, 'real'), { mode: 0o755 });
    symlinkSync(join(tmp.dir, 'real'), join(tmp.dir, 'alias'));
    expect(trustedDirectoryPath(join(tmp.dir, 'alias', 'samba'))).toBe(join(tmp.dir, 'real', 'samba'));
    // /tmp is world-writable but sticky and root's: others cannot rename root's entries there.
    expect(trustedDirectoryPath(join(tmp.dir, 'real'))).toBe(join(tmp.dir, 'real'));
  });

  it('refuses a directory on the way that another user owns, or that others can write', () => {
    const theirs = join(tmp.dir, 'theirs');
    mkdirSync(theirs, { mode: 0o700 });
    chownSync(theirs, NOBODY, NOBODY);
    expect(codeAndMessage(thrown(() => trustedDirectoryPath(join(theirs, 'samba'))))).toBe(
      `UNSAFE_PATH: ${theirs} is not root's (owner uid ${NOBODY}, mode 0700); root will not use it (see docs/security.md)`,
    );
    const open = join(tmp.dir, 'open');
    mkdirSync(open);
    chmodSync(open, 0o775);
    expect(codeAndMessage(thrown(() => trustedDirectoryPath(join(open, 'samba'))))).toMatch(
      /UNSAFE_PATH: .*open can be written by others than root \(owner uid 0, mode 0775\)/,
    );
  });

  it('refuses the directory itself when it is a link or not root’s', () => {
    symlinkSync('/etc', join(tmp.dir, 'link'));
    expect(codeAndMessage(thrown(() => trustedDirectoryPath(join(tmp.dir, 'link'))))).toMatch(
      /UNSAFE_PATH: .*link is a symbolic link/,
    );
    writeFileSync(join(tmp.dir, 'file'), '');
    expect(codeAndMessage(thrown(() => trustedDirectoryPath(join(tmp.dir, 'file'))))).toMatch(
      /is not a directory/,
    );
  });
});

describe('ensureRootDirectory', () => {
  it('makes the directory, or takes an existing one of root’s, with the group and mode asked for', () => {
    const dir = join(tmp.dir, 'made');
    ensureRootDirectory(dir, 0o750, 13);
    expect(lstatSync(dir)).toMatchObject({ uid: 0, gid: 13 });
    expect(lstatSync(dir).mode & 0o7777).toBe(0o750);
    chmodSync(dir, 0o777);
    ensureRootDirectory(dir, 0o700);
    expect(lstatSync(dir).mode & 0o7777).toBe(0o700);
  });

  it('refuses a link in its place, and a directory another user made, changing neither', () => {
    const target = join(tmp.dir, 'target');
    mkdirSync(target, { mode: 0o700 });
    symlinkSync(target, join(tmp.dir, 'planted'));
    expect(codeAndMessage(thrown(() => ensureRootDirectory(join(tmp.dir, 'planted'), 0o750, 13)))).toMatch(
      /UNSAFE_PATH: .*planted is not a directory \(a symbolic link\?\)/,
    );
    expect(lstatSync(target)).toMatchObject({ uid: 0, gid: 0 });
    const theirs = join(tmp.dir, 'theirs');
    mkdirSync(theirs, { mode: 0o777 });
    chownSync(theirs, NOBODY, NOBODY);
    expect(codeAndMessage(thrown(() => ensureRootDirectory(theirs, 0o700)))).toMatch(
      /theirs was not made by root \(owner uid 65534/,
    );
    expect(lstatSync(theirs)).toMatchObject({ uid: NOBODY });
  });
});

describe('writeRootFile and setRootEntryAccess', () => {
  it('replaces a file whole, with owner and mode set before it takes the name, even over a link', () => {
    const file = join(tmp.dir, 'smb.conf');
    writeFileSync(join(tmp.dir, 'victim'), 'untouched\n');
    symlinkSync(join(tmp.dir, 'victim'), file);
    writeRootFile(file, 'new\n', 0o640, 13);
    expect(lstatSync(file).isFile()).toBe(true);
    expect(lstatSync(file)).toMatchObject({ uid: 0, gid: 13 });
    expect(lstatSync(file).mode & 0o7777).toBe(0o640);
    expect(readFileSync(file, 'utf8')).toBe('new\n');
    expect(readFileSync(join(tmp.dir, 'victim'), 'utf8')).toBe('untouched\n');
  });

  it('sets access only on a real entry of root’s of the kind expected', () => {
    writeFileSync(join(tmp.dir, 'victim'), '', { mode: 0o600 });
    symlinkSync(join(tmp.dir, 'victim'), join(tmp.dir, 'keytab'));
    expect(
      codeAndMessage(thrown(() => setRootEntryAccess(join(tmp.dir, 'keytab'), 'file', 0o640, 13))),
    ).toMatch(/UNSAFE_PATH: .*keytab is not a file \(a symbolic link\?\)/);
    expect(lstatSync(join(tmp.dir, 'victim'))).toMatchObject({ gid: 0 });
    mkdirSync(join(tmp.dir, 'pipe'));
    expect(
      codeAndMessage(thrown(() => setRootEntryAccess(join(tmp.dir, 'pipe'), 'file', 0o640, 13))),
    ).toMatch(/is not a regular file/);
    setRootEntryAccess(join(tmp.dir, 'pipe'), 'directory', 0o750, 13);
    expect(lstatSync(join(tmp.dir, 'pipe'))).toMatchObject({ uid: 0, gid: 13 });
  });
});

describe('removeRootEntries', () => {
  it('removes all but what it is told to keep, a link inside as a link', () => {
    const dir = join(tmp.dir, 'samba');
    mkdirSync(join(dir, 'private'), { recursive: true });
    mkdirSync(join(dir, 'log'));
    mkdirSync(join(tmp.dir, 'victim'));
    writeFileSync(join(tmp.dir, 'victim', 'secret'), 'kept\n');
    symlinkSync(join(tmp.dir, 'victim'), join(dir, 'private', 'link'));
    symlinkSync(join(tmp.dir, 'victim'), join(dir, 'link'));
    expect(removeRootEntries(dir, ['log']).sort()).toEqual(['link', 'private']);
    expect(readFileSync(join(tmp.dir, 'victim', 'secret'), 'utf8')).toBe('kept\n');
    expect(removeRootEntries(join(tmp.dir, 'missing'), [])).toEqual([]);
  });
});

describe('readRegularFileCapped', () => {
  it('reads a file up to its cap', async () => {
    writeFileSync(join(tmp.dir, 'f'), 'x'.repeat(16));
    expect((await readRegularFileCapped(join(tmp.dir, 'f'), 16)).toString()).toBe('x'.repeat(16));
    expect(codeAndMessage(await rejection(readRegularFileCapped(join(tmp.dir, 'f'), 15)))).toMatch(
      /TOO_LARGE: .*f is larger than 15 bytes/,
    );
  });

  it('follows no link, waits on no FIFO, and reads no device', async () => {
    symlinkSync('/dev/zero', join(tmp.dir, 'zero'));
    execFileSync('mkfifo', [join(tmp.dir, 'fifo')]);
    for (const [name, why] of [
      ['zero', /is a symbolic link/],
      ['fifo', /is not a regular file/],
    ] as const) {
      const error = await rejection(readRegularFileCapped(join(tmp.dir, name), 1024));
      expect(codeAndMessage(error)).toMatch(why);
    }
    expect(codeAndMessage(await rejection(readRegularFileCapped('/dev/zero', 1024)))).toMatch(
      /is not a regular file/,
    );
  });
});
