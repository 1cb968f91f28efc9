import type { Directory } from '../lib/directory/directory.ts';
import { err, ok, type HelperReply, type HelperRequest } from '../lib/helper-protocol/message.ts';
import { describeRefusal } from '../lib/security/password-guesses.ts';
import type { CheckContext } from './authd/directory-service.ts';
import { askDirectory } from './directory-runtime.ts';

/**
 * Squid's Basic authentication helper protocol: `[channel] user password [client-address]` (URL-escaped by
 * Squid; the address is `auth_param basic key_extras "%>a"`) in; `OK user=<normalised name>`, `ERR` when the
 * credentials are wrong (the user's fault: Squid answers 407 again), `BH` when the directory cannot be asked
 * (ours: Squid does not blame the user) out. An ERR's message says why in words for cache.log; it never
 * contains the password.
 *
 * Every check goes through the password-guessing limits the splash page shares (lib/security/password-guesses.ts):
 * past them the answer is `ERR message=RATE_LIMITED …` without asking the directory, and cache.log says so.
 */
export function checkBasic(
  directory: Directory | undefined,
  request: HelperRequest,
  context: CheckContext,
): Promise<HelperReply> {
  const [user, password, address, ...rest] = request.fields;
  if (user === undefined || password === undefined || rest.length > 0) {
    return Promise.resolve(err('expected "user password [client-address]"'));
  }
  return askDirectory(directory, async (d) => {
    const guarded = await context.guesses.guard(user, address, () => d.checkPassword(user, password));
    if (!guarded.ok) {
      const words = describeRefusal(guarded.refusal);
      return { ...err(words), cacheLog: `basic: ${words}` };
    }
    const result = guarded.check;
    return result.ok ? ok([['user', result.user]]) : err(result.reason);
  });
}
