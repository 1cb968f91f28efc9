import type { Middleware } from 'koa';
import type { ApiKeyStore } from '../../lib/store/api-key-store.ts';
import { ApiError } from '../errors.ts';
import { clientIpOf, paramsOf, type PortalState } from '../state.ts';
import type { KeyFailureLimiter } from './key-rate-limit.ts';

/**
 * The `api_key` form field must be a live key. Wrong, unknown, malformed and revoked keys get one answer, so a
 * caller learns nothing about which it was; each counts against the caller's address.
 */
export function requireApiKey(apiKeys: ApiKeyStore, limiter: KeyFailureLimiter): Middleware<PortalState> {
  return async function checkApiKey(ctx, next) {
    if (!apiKeys.verify(paramsOf(ctx).get('api_key') ?? '')) {
      limiter.recordFailure(clientIpOf(ctx));
      throw new ApiError('invalid_api_key', 'the API key is wrong or revoked');
    }
    await next();
  };
}
