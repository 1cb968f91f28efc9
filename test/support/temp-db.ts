import { join } from 'node:path';
import { afterEach } from 'vitest';
import { openDatabase, type Db, type OpenOptions } from '../../lib/store/database.ts';
import { useTempDir } from './temp-dir.ts';

export interface TempDb {
  /** The test's own directory (fresh for every test). */
  readonly dir: string;
  /** Path of the DB file in it. */
  readonly path: string;
  /** Open a handle on that file; closed after the test. */
  connect(options?: OpenOptions): Db;
  /** Close `db` after the test too: for a handle opened another way (a plain better-sqlite3 one, say). */
  track(db: Db): Db;
}

/** A fresh directory and DB path per test, every handle closed and the directory removed afterwards. */
export function useTempDb(prefix = 'doorman-test-'): TempDb {
  const tmp = useTempDir(prefix);
  const handles: Db[] = [];
  // Registered after useTempDir's, so it runs before the directory is removed (vitest runs after-hooks as a stack).
  afterEach(() => {
    for (const db of handles.splice(0)) if (db.open) db.close();
  });
  const path = () => join(tmp.dir, 'doorman.db');
  const track = (db: Db): Db => {
    handles.push(db);
    return db;
  };
  return {
    get dir() {
      return tmp.dir;
    },
    get path() {
      return path();
    },
    connect: (options) => track(openDatabase(path(), options)),
    track,
  };
}
