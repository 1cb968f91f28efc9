import { parseArgs } from 'node:util';
import { systemClock } from '../lib/clock.ts';
import { dbPath, loadConfig } from '../lib/config/load.ts';
import type { Directory } from '../lib/directory/directory.ts';
import { bh, type HelperReply, type HelperRequest } from '../lib/helper-protocol/message.ts';
import { runHelper } from '../lib/helper-protocol/run.ts';
import { stderrLog } from '../lib/log.ts';
import { unlessBusy } from '../lib/store/busy.ts';
import { openDatabase } from '../lib/store/database.ts';
import { DirectorySettingsStore, directoryPasswordPath } from '../lib/store/directory-settings-store.ts';
import { DirectoryRuntime } from './directory-runtime.ts';
import { Reopening } from './reopening.ts';

/**
 * The I/O shell shared by the directory helpers (Basic authentication, groups): config, the settings in the
 * session DB (re-read when Save & apply changes them), and the helper protocol on stdin/stdout.
 */
export async function runDirectoryHelper(
  name: string,
  check: (directory: Directory | undefined, request: HelperRequest) => Promise<HelperReply>,
): Promise<void> {
  const log = stderrLog(name);
  const { values } = parseArgs({
    options: { config: { type: 'string' }, sequential: { type: 'boolean', default: false } },
  });
  // The configuration is read inside, so a broken one is answered with BH and retried, not an exit.
  const runtime = new Reopening(
    'directory settings',
    () => {
      const { config } = loadConfig(values.config);
      // Never wait for a lock: it would hold every answer (see lib/store/busy.ts).
      const db = openDatabase(dbPath(config), { mustExist: true, busyTimeoutMs: 0 });
      const store = new DirectorySettingsStore(db, {
        passwordFile: directoryPasswordPath(config),
        clock: systemClock,
      });
      return new DirectoryRuntime(store, { db, clock: systemClock, log });
    },
    log,
    (dropped) => void dropped.close(),
  );
  await runHelper({
    input: process.stdin,
    output: process.stdout,
    channelIds: !values.sequential,
    log,
    // A read that meets SQLITE_BUSY (rare in WAL): keep the settings in force, look again at the next batch.
    beforeBatch: () => runtime.use((r) => void unlessBusy(() => r.refresh())),
    handle: (request) => {
      const current = runtime.get();
      return current === undefined
        ? bh('settings unavailable, see cache.log')
        : check(current.current, request);
    },
  });
  await runtime.get()?.close();
  // Squid has closed our stdin and every answer is written. Requests that were cut off by a directory
  // outage may leave ldapts timers behind for a whole timeout: leave now rather than linger.
  process.exit(0);
}
