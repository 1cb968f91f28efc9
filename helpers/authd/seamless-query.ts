import { bh } from '../../lib/helper-protocol/message.ts';
import type { HelperHandlers } from '../../lib/helper-protocol/run.ts';
import { seamlessAnswer, seamlessQueryOf } from '../../lib/helper-protocol/seamless-query.ts';
import type { LastSeamlessResults } from '../../lib/seamless/last-results.ts';
import { normaliseIp } from '../../lib/net/address.ts';

/**
 * The session socket's handlers, answering `doorman explain`'s question about an address's last seamless
 * sign-on (lib/helper-protocol/seamless-query.ts) besides Squid's lookups. Memory only: the lookups' DB,
 * cache and "last seen" are not touched by it.
 */
export function withSeamlessQuery(handlers: HelperHandlers, results: LastSeamlessResults): HelperHandlers {
  return {
    ...handlers,
    handle(request) {
      const query = seamlessQueryOf(request);
      if (query === undefined) return handlers.handle(request);
      const ip = query.address === undefined ? undefined : normaliseIp(query.address);
      if (ip === undefined) return bh('seamless-last: expected one IP address');
      return seamlessAnswer(results.get(ip));
    },
  };
}
