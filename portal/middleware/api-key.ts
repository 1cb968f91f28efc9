import type { Middleware } from 'koa';
import { addressGroup } from '../../lib/net/address.ts';
import { countKeyFailure } from '../../lib/metrics/web.ts';
import type { ApiKeyRepository } from '../../lib/store/store.ts';
import { ApiError } from '../errors.ts';
import { clientIpOf, paramsOf, type PortalState } from '../state.ts';
import type { KeyFailureLimiter } from './key-rate-limit.ts';

/**
 * The `api_key` form field must be a live key. Wrong, unknown, malformed and revoked keys get one answer, so a
 * caller learns nothing about which it was; each counts against the caller's address group (an IPv4 address,
 * an IPv6 /64).
 *
 * The key is checked even when the address has used up its failures: many clients share one address behind
 * NAT, and one script with a wrong key must not lock out every correct one. Only a wrong key gets the 429 then.
 * This gives a guesser no faster oracle: every request is checked the same way (no early answer that would tell
 * a refusal from a check by its timing), each guess still costs a whole request, and the answer to a wrong key
 * (429 instead of 401) says nothing about the key. What stops guessing is the 256-bit secret; the limit makes it
 * loud (429s in the request log) and tells a misconfigured script to back off.
 */
export function requireApiKey(
  apiKeys: Pick<ApiKeyRepository, 'check'>,
  limiter: KeyFailureLimiter,
): Middleware<PortalState> {
  return async function checkApiKey(ctx, next) {
    const name = apiKeys.check(paramsOf(ctx).get('api_key') ?? '');
    if (name === undefined) {
      const group = addressGroup(clientIpOf(ctx));
      const seconds = limiter.retryAfter(group);
      limiter.recordFailure(group);
      countKeyFailure(seconds > 0);
      if (seconds > 0) {
        throw new ApiError(
          'too_many_requests',
          `too many wrong API keys from this address; retry in ${seconds}s`,
          { headers: { 'Retry-After': String(seconds) } },
        );
      }
      throw new ApiError('invalid_api_key', 'the API key is wrong or revoked');
    }
    ctx.state.apiKey = name;
    await next();
  };
}
