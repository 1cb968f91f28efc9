import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';

export interface TempDir {
  /** The test's own directory (fresh for every test). */
  readonly dir: string;
  /** Write `contents` to the file `name` in it; returns the file's path. */
  write(name: string, contents: string | Buffer): string;
}

/** A fresh directory per test, removed with all it holds afterwards. */
export function useTempDir(prefix = 'doorman-test-'): TempDir {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), prefix));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    get dir() {
      return dir;
    },
    write(name, contents) {
      const path = join(dir, name);
      writeFileSync(path, contents);
      return path;
    },
  };
}
