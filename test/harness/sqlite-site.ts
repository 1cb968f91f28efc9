import { join } from 'node:path';
import { afterEach } from 'vitest';
import { ManualClock } from '../../lib/clock.ts';
import { openDatabase, type Db } from '../../lib/store/database.ts';
import { openSqliteStore } from '../../lib/store/sqlite-store.ts';
import type { Store } from '../../lib/store/store.ts';
import type { Box, BoxOptions, Site } from '../unit/lib/store/contract/site.ts';
import { pick } from '../support/pick.ts';
import { useTempDir } from '../support/temp-dir.ts';

/**
 * Sites of boxes on one SQLite file: each box its own handle on the file and its own openSqliteStore, as
 * separate processes on one machine would have (the web app, authd, the CLI). What the store contract suites
 * (test/unit/lib/store/contract/) run on for SQLite. SQLite has no copy to bring up to date: every read asks
 * the file, and the classes that cache (Device Groups) check PRAGMA data_version first, so a commit by one box
 * is seen by the others at their next read and `sync()` has nothing to wait for.
 */

export interface SqliteBox extends Box<Store> {
  /** This box's handle on the site's file. */
  readonly db: Db;
}

export interface SqliteSite extends Site<Store> {
  box(options?: BoxOptions): Promise<SqliteBox>;
  /** The site's DB file. */
  readonly path: string;
}

export function useSqliteSite(): { open(options?: { now?: number }): Promise<SqliteSite> } {
  const tmp = useTempDir('doorman-sqlite-site-');
  const stores: Store[] = [];
  const handles: Db[] = [];
  // Registered after useTempDir's, so it runs before the directory is removed (after-hooks run as a stack):
  // what each box was asked to write is written, then every handle is closed.
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
    for (const db of handles.splice(0)) if (db.open) db.close();
  });
  let sites = 0;

  const open = async (options: { now?: number } = {}): Promise<SqliteSite> => {
    const clock = new ManualClock(options.now);
    const name = `site${++sites}`;
    const path = join(tmp.dir, `${name}.db`);
    let boxes = 0;

    const box = async (boxOptions: BoxOptions = {}): Promise<SqliteBox> => {
      const db = openDatabase(path);
      handles.push(db);
      const store = openSqliteStore(db, {
        clock,
        passwordFile: boxOptions.passwordFile ?? join(tmp.dir, `${name}-box${++boxes}-bind-password`),
        ...pick(boxOptions, 'leastIdleSeconds', 'directoryApplied', 'sessionTtlMs', 'log'),
        audit: {
          box: boxOptions.name ?? `box${boxes}`,
          ...(boxOptions.ship === undefined ? {} : { ship: boxOptions.ship }),
        },
      });
      stores.push(store);
      return { store, db, sync: async () => undefined };
    };
    return { clock, box, path };
  };
  return { open };
}
