/**
 * Squid external ACL helper: who is behind this client address?
 *
 *   external_acl_type doorman_session ttl=5 negative_ttl=0 concurrency=100 %SRC %>eui \
 *       /path/to/node /path/to/dist/helpers/session-acl.js --db /var/lib/doorman/doorman.db --flush-seconds 30
 *
 * With `--db` and `--flush-seconds` it loads neither the config schema nor TypeScript: about 50 MB instead of
 * 90. With `--config FILE` instead it reads the configuration itself.
 *
 * Answers `OK user=NAME` for a live session on the IP (or the MAC), `ERR` otherwise, `BH message=...` for a
 * line it cannot parse or a DB it cannot read.
 *
 * The lookup itself is helpers/authd/session-service.ts. `doorman squid-conf` writes the shim instead
 * (native/doorman-shim.c), which authd answers with the same service; this stand-alone helper runs without
 * authd (tests, benches).
 */
import { parseArgs } from 'node:util';
import { runHelper } from '../lib/helper-protocol/run.ts';
import { stderrLog } from '../lib/log.ts';
import { createSessionService } from './authd/session-service.ts';

const log = stderrLog('doorman-session-acl');
const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    'flush-seconds': { type: 'string', default: '30' },
    config: { type: 'string' },
    sequential: { type: 'boolean', default: false },
  },
});

// Only with --config: the schema (zod) costs about 20 MB per helper process.
const configFile = values.db === undefined ? await import('../lib/config/load.ts') : undefined;

/** Where the DB is and how often to write "last seen": from the arguments, or from the config file. */
function settings(): { path: string; flushEveryMs: number } {
  if (configFile === undefined) {
    const seconds = Number(values['flush-seconds']);
    if (!Number.isInteger(seconds) || seconds < 1) {
      throw new Error(
        `--flush-seconds: ${JSON.stringify(values['flush-seconds'])} is not a whole number of seconds`,
      );
    }
    return { path: values.db as string, flushEveryMs: seconds * 1000 };
  }
  const { config } = configFile.loadConfig(values.config);
  return { path: configFile.dbPath(config), flushEveryMs: config.lastSeenFlushSeconds * 1000 };
}

const service = createSessionService({ settings, log });
await runHelper({
  input: process.stdin,
  output: process.stdout,
  channelIds: !values.sequential,
  log,
  ...service.handlers,
});
service.close();
