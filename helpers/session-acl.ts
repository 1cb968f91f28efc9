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
import { bh, type HelperReply } from '../lib/helper-protocol/message.ts';
import { runHelper } from '../lib/helper-protocol/run.ts';
import { stderrLog } from '../lib/log.ts';
import { openDatabase } from '../lib/store/database.ts';
import { SessionStore } from '../lib/store/session-store.ts';
import { Reopening } from './reopening.ts';
import { SessionLookup } from './session-lookup.ts';

const log = stderrLog('doorman-session-acl');
const { values } = parseArgs({
  options: { config: { type: 'string' }, sequential: { type: 'boolean', default: false } },
});

/** The configuration is read inside, so a broken one is answered with BH and retried, not an exit. */
const lookup = new Reopening(
  'session DB',
  () => {
    const { config } = loadConfig(values.config);
    const db = openDatabase(dbPath(config), { mustExist: true });
    return {
      db,
      flushEveryMs: config.lastSeenFlushSeconds * 1000,
      sessions: new SessionLookup(new SessionStore(db, systemClock), systemClock),
    };
  },
  log,
  (opened) => opened.db.close(),
);
let lastFlush = Date.now();

await runHelper({
  input: process.stdin,
  output: process.stdout,
  channelIds: !values.sequential,
  log,
  beforeBatch: () => lookup.use((l) => l.sessions.refresh()),
  handle: (request) => {
    let reply: HelperReply = bh('session DB unavailable, see cache.log');
    lookup.use((l) => (reply = l.sessions.handle(request)));
    return reply;
  },
  afterBatch: () =>
    lookup.use((l) => {
      if (Date.now() - lastFlush < l.flushEveryMs) return;
      lastFlush = Date.now();
      l.sessions.flushSeen();
    }),
});
lookup.use((l) => l.sessions.flushSeen());
