import { parseArgs } from 'node:util';
import { loadConfig } from '../lib/config/load.ts';
import { runHelper } from '../lib/helper-protocol/run.ts';
import { stderrLog } from '../lib/log.ts';
import { createDirectoryService, type DirectoryCheck } from './authd/directory-service.ts';

/**
 * The I/O shell shared by the direct directory helpers (Basic authentication, groups): the directory service
 * (helpers/authd/directory-service.ts, which authd serves to the shim too) on stdin/stdout.
 */
export async function runDirectoryHelper(name: string, check: DirectoryCheck): Promise<void> {
  const log = stderrLog(name);
  const { values } = parseArgs({
    options: { config: { type: 'string' }, sequential: { type: 'boolean', default: false } },
  });
  const service = createDirectoryService({ config: () => loadConfig(values.config).config, log });
  await runHelper({
    input: process.stdin,
    output: process.stdout,
    channelIds: !values.sequential,
    log,
    ...service.handlers(check),
  });
  await service.close();
  // Squid has closed our stdin and every answer is written. Requests that were cut off by a directory
  // outage may leave ldapts timers behind for a whole timeout: leave now rather than linger.
  process.exit(0);
}
