import type { Directory } from '../lib/directory/directory.ts';
import { err, ok, type HelperReply, type HelperRequest } from '../lib/helper-protocol/message.ts';
import { askDirectory } from './directory-runtime.ts';

/**
 * Squid's Basic authentication helper protocol: `[channel] user password` (both URL-escaped by Squid) in;
 * `OK user=<normalised name>`, `ERR` when the credentials are wrong (the user's fault: Squid answers 407
 * again), `BH` when the directory cannot be asked (ours: Squid does not blame the user) out. An ERR's
 * message says why in words for cache.log; it never contains the password.
 */
export function checkBasic(directory: Directory | undefined, request: HelperRequest): Promise<HelperReply> {
  const [user, password, ...rest] = request.fields;
  if (user === undefined || password === undefined || rest.length > 0) {
    return Promise.resolve(err('expected "user password"'));
  }
  return askDirectory(directory, async (d) => {
    const result = await d.checkPassword(user, password);
    return result.ok ? ok([['user', result.user]]) : err(result.reason);
  });
}
