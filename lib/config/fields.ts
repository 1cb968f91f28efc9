import { z } from 'zod';
import { normaliseIp } from '../net/address.ts';

/** The field types the configuration's sections are made of (lib/config/schema.ts, squid-schema.ts). */

/** An IPv4 or IPv6 address, normalised (lib/net/address.ts). */
export const ipAddress = z.string().transform((value, ctx) => {
  const ip = normaliseIp(value);
  if (ip === undefined) {
    ctx.addIssue({ code: 'custom', message: `${JSON.stringify(value)} is not an IPv4 or IPv6 address` });
    return z.NEVER;
  }
  return ip;
});

/** A TCP port. */
export const port = z.number().int().min(1).max(65535);
/** Squid's children of one helper at most (children-max=). */
export const helperChildren = z.number().int().min(1).max(64);
/** Lookups Squid sends one helper child at once (concurrency=). */
export const helperConcurrency = z.number().int().min(1).max(1000);
/** A cache or timeout time in seconds, up to a day. */
export const seconds = z.number().int().min(0).max(86_400);

/** An absolute path written into squid.conf as one token. */
export const squidPath = z
  .string()
  .regex(
    /^\/[^\s"'\\#]{0,4095}$/,
    'must be an absolute path without spaces, quotes, backslashes or "#" (squid.conf cannot hold them)',
  );
