/**
 * Squid external ACL helper: who is behind this client address?
 *
 *   external_acl_type doorman_session ttl=5 negative_ttl=0 concurrency=100 %SRC %>eui \
 *       /path/to/node /path/to/helpers/session-acl.ts [--config FILE]
 *
 * Answers `OK user=NAME` for a live session on the IP (or the MAC), `ERR` otherwise, `BH message=...` for a
 * line it cannot parse or a DB it cannot read. `doorman squid-conf` writes the line above.
 */
import { parseArgs } from 'node:util';
import { systemClock } from '../lib/clock.ts';
import { dbPath, loadConfig } from '../lib/config/load.ts';
import { bh } from '../lib/helper-protocol/message.ts';
import { runHelper } from '../lib/helper-protocol/run.ts';
import { stderrLog } from '../lib/log.ts';
import { openDatabase } from '../lib/store/database.ts';
import { SessionStore } from '../lib/store/session-store.ts';
import { SessionLookup } from './session-lookup.ts';

const log = stderrLog('doorman-session-acl');
const { values } = parseArgs({
  options: { config: { type: 'string' }, sequential: { type: 'boolean', default: false } },
});
const { config } = loadConfig(values.config);
const path = dbPath(config);
const flushEveryMs = config.lastSeenFlushSeconds * 1000;

/** Opened on first use and again after a failure (at most once a second), so a DB that appears later is found. */
let lookup: SessionLookup | undefined;
let failedAt = -Infinity;
let lastFlush = Date.now();

function current(): SessionLookup | undefined {
  if (lookup === undefined && Date.now() - failedAt >= 1000) {
    try {
      lookup = new SessionLookup(
        new SessionStore(openDatabase(path, { mustExist: true }), systemClock),
        systemClock,
      );
    } catch (error) {
      failedAt = Date.now();
      log(`cannot open session DB: ${(error as Error).message}`);
    }
  }
  return lookup;
}

function guard(action: () => void): void {
  try {
    action();
  } catch (error) {
    // A DB error mid-run (file replaced, disk gone): drop the handle and reopen on the next batch.
    log(`session DB error: ${(error as Error).message}`);
    lookup = undefined;
    failedAt = Date.now();
  }
}

await runHelper({
  input: process.stdin,
  output: process.stdout,
  channelIds: !values.sequential,
  log,
  beforeBatch: () => guard(() => current()?.refresh()),
  handle: (request) => {
    const active = current();
    if (active === undefined) return bh('session DB unavailable, see cache.log');
    let reply = bh('session DB error, see cache.log');
    guard(() => (reply = active.handle(request)));
    return reply;
  },
  afterBatch: () => {
    if (Date.now() - lastFlush < flushEveryMs) return;
    lastFlush = Date.now();
    guard(() => lookup?.flushSeen());
  },
});
guard(() => lookup?.flushSeen());
