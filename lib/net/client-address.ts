import { showValue } from '../errors.ts';
import { PROXY_CLIENT_HEADER } from '../security/proxy-key.ts';
import { normaliseIp } from './address.ts';

/**
 * - `ok`: the address the request is from.
 * - `unproven`: it came from a trusted proxy that did not prove it wrote the client address (a CONNECT tunnel
 *   through it, where the client writes every header, or a program on the proxy host): nobody knows whose it is.
 * - `invalid`: something that should be an address is not one.
 */
export type ClientAddress =
  | { ok: true; ip: string }
  | { ok: false; kind: 'unproven'; peer: string; reason: string }
  | { ok: false; kind: 'invalid'; reason: string };

/** A key, a space and an IPv6 address fit easily; longer values are refused, not cut. */
export const MAX_CLIENT_HEADER_LENGTH = 256;

/** Something that knows the proxy key (lib/security/proxy-key.ts); undefined when none is loaded. */
export interface ProxyKeyMatcher {
  matches(presented: string): boolean;
}

/**
 * The address a session belongs to: the TCP peer, unless the peer is a trusted proxy, in which case the
 * address the proxy wrote in `X-Doorman-Client: <proxy key> <address>`.
 *
 * X-Forwarded-For, Forwarded and X-Real-IP are never read: "it may be modified ... by every node on the way to
 * the server, including the client" (RFC 7239 §8.1), and a trusted peer does not make them trustworthy,
 * because a client can open a CONNECT tunnel through the proxy and write them itself, with the proxy as the
 * TCP peer. Only the proxy key, which Squid adds to the requests it forwards and the client never sees, tells
 * a header the proxy wrote from one the client wrote. A trusted peer without it is refused, not taken at its
 * own address: that address is the proxy's, not the client's.
 */
export function clientAddress(
  peer: string,
  header: string | undefined,
  trusted: ReadonlySet<string>,
  key: ProxyKeyMatcher | undefined,
): ClientAddress {
  const peerIp = normaliseIp(peer);
  if (peerIp === undefined)
    return { ok: false, kind: 'invalid', reason: `peer address ${showValue(peer)} is not an IP address` };
  if (!trusted.has(peerIp)) return { ok: true, ip: peerIp };

  const unproven = (why: string): ClientAddress => ({
    ok: false,
    kind: 'unproven',
    peer: peerIp,
    reason:
      `the request came from trusted proxy ${peerIp} ${why}, so Doorman cannot tell which device sent it ` +
      '(a CONNECT tunnel through the proxy carries only what the client wrote): reach Doorman directly, or ' +
      'through Squid as plain HTTP',
  });
  if (header === undefined) return unproven(`without ${PROXY_CLIENT_HEADER}`);
  // Node joins repeated headers with ", ": Squid sends exactly one, so a comma means someone else wrote one too.
  if (header.length > MAX_CLIENT_HEADER_LENGTH || header.includes(',')) {
    return unproven(`with a malformed ${PROXY_CLIENT_HEADER}`);
  }
  const space = header.indexOf(' ');
  const presented = space < 0 ? '' : header.slice(0, space);
  const address = space < 0 ? '' : header.slice(space + 1).trim();
  // Never echoed: the first word is (or claims to be) the key.
  if (key === undefined || !key.matches(presented)) {
    return unproven(
      `with a ${PROXY_CLIENT_HEADER} that does not carry the proxy key (an include made before the key ` +
        'changed? run "doorman squid-conf" again)',
    );
  }
  const ip = normaliseIp(address);
  if (ip === undefined) {
    return {
      ok: false,
      kind: 'invalid',
      reason: `${PROXY_CLIENT_HEADER} address ${showValue(address)} is not an IP address`,
    };
  }
  return { ok: true, ip };
}
