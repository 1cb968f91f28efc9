import { showValue } from '../errors.ts';
import { normaliseIp } from './address.ts';

export type ClientAddress = { ok: true; ip: string } | { ok: false; reason: string };

/** Longer X-Forwarded-For values are refused, not truncated: a cut list would name the wrong client. */
export const MAX_FORWARDED_FOR_LENGTH = 2048;

/**
 * The address a session belongs to. X-Forwarded-For is a list each proxy extends on the right with the
 * address it received the request from, and RFC 7239 §8.1 warns that such a header "cannot be relied upon to
 * be correct, as it may be modified ... by every node on the way to the server, including the client". So only
 * a trusted peer's header is read, and only from the right: entries added by trusted proxies are skipped, and
 * the first untrusted entry is the furthest hop anyone we trust vouches for. Anything left of it may be forged.
 */
export function clientAddress(
  peer: string,
  forwardedFor: string | undefined,
  trusted: ReadonlySet<string>,
): ClientAddress {
  const peerIp = normaliseIp(peer);
  if (peerIp === undefined)
    return { ok: false, reason: `peer address ${showValue(peer)} is not an IP address` };
  if (!trusted.has(peerIp) || forwardedFor === undefined || forwardedFor.trim() === '') {
    return { ok: true, ip: peerIp };
  }
  if (forwardedFor.length > MAX_FORWARDED_FOR_LENGTH) {
    return { ok: false, reason: `X-Forwarded-For is longer than ${MAX_FORWARDED_FOR_LENGTH} characters` };
  }
  const hops = forwardedFor.split(',').map((entry) => entry.trim());
  let leftmost = peerIp;
  for (let i = hops.length - 1; i >= 0; i--) {
    const entry = hops[i] ?? '';
    const ip = normaliseIp(entry);
    if (ip === undefined) {
      return { ok: false, reason: `X-Forwarded-For entry ${showValue(entry)} is not an IP address` };
    }
    if (!trusted.has(ip)) return { ok: true, ip };
    leftmost = ip;
  }
  // Every hop is one of ours (say, Squid fetching on its own behalf): the earliest of them is the client.
  return { ok: true, ip: leftmost };
}
