import { normaliseIp } from '../lib/net/address.ts';
import { CidrSet, walledHostMatches, type PortalSettings } from '../lib/portal/settings.ts';
import type { PortalUrlSigner } from '../lib/security/portal-url-signature.ts';
import type { ProxyKeyCheck } from '../lib/security/proxy-key.ts';
import type { Decision } from './server.ts';
import { isCaptivePortalProbe } from './captive-probes.ts';
import { satisfy } from './portal-answer.ts';
import { canonicalHost, hostAgrees, isOwnSite, parseTarget, type TargetUrl } from './target-url.ts';

/**
 * The captive portal's answer to one request Squid sends to ICAP (issue 7, "the decision per request"). Pure:
 * whether a client is identified comes in as a function (the session DB behind it is the caller's), and the
 * answer is a Decision for the socket shell (server.ts).
 *
 * In order: mode off → no change. An identified client (Squid names a user, or a session exists for the
 * address) → no change. Doorman's own site → no change. An operating system's captive-portal probe
 * (captive-probes.ts) → 302 to the splash page, even on a walled-garden host, so the OS opens its sign-in
 * sheet. The directory and the walled garden → no change. In registration mode, the device's MAC: a
 * registered device → no change (asked last, being the only slow question: a neighbour-table lookup).
 * Anything else is satisfied here and never reaches the origin: a page load (GET or HEAD whose Accept takes
 * text/html) is sent to the splash page with a 302, anything else gets 511 Network Authentication Required
 * (RFC 6585 §6) with a link to it, since a script or an image cannot follow a login page anyway and a 302
 * would hand it HTML it did not ask for.
 */
export type PortalDecisionSettings = Pick<PortalSettings, 'mode' | 'walledGarden'>;

/** What the decision reads from one ICAP REQMOD: two ICAP headers and the encapsulated HTTP request. */
export interface PortalRequest {
  /** X-Client-IP (icap_send_client_ip on). */
  clientIp: string | undefined;
  /** X-Client-Username (icap_send_client_username on): present when Squid knows the user. */
  clientUsername: string | undefined;
  /**
   * X-Doorman-Key (adaptation_meta): the proxy key, Squid's proof that it wrote X-Client-IP. Anyone who can
   * reach the ICAP port can write an X-Client-IP; only Squid has the key.
   */
  proxyKey: string | undefined;
  method: string;
  /** The HTTP request-target as sent: absolute-form from Squid, origin-form from other ICAP clients. */
  target: string;
  /** The HTTP Host header. */
  host: string | undefined;
  /** The HTTP Accept header. */
  accept: string | undefined;
}

export interface PortalInput {
  settings: PortalDecisionSettings;
  request: PortalRequest;
  /** Doorman's base URL (config baseUrl, ending in "/"): its site is never redirected, its portal is there. */
  baseUrl: string;
  /** The directory's host names or addresses (clients may need to reach it, e.g. for a password change). */
  directoryHosts: readonly string[];
  /** A live session for this (normalised) address. */
  isIdentified: (ip: string) => boolean;
  /**
   * Registration mode only: whether the device at this (normalised) address has a live MAC registration
   * (the caller may bind the address to it, see lib/portal/address-binding.ts). Asked only when nothing
   * else lets the request through; a rejection counts as "no" (the splash page then says why).
   */
  isRegisteredDevice?: (ip: string) => Promise<boolean>;
  /**
   * Signs the original URL for the client's (normalised) address (lib/security/portal-url-signature.ts): the
   * splash page follows only a URL signed here, so a crafted `portal/?url=` link leads nowhere.
   */
  portalUrls: Pick<PortalUrlSigner, 'sign'>;
  /**
   * Checks the request's proxyKey (lib/security/proxy-key.ts, in constant time): a URL is signed only for a
   * request that carries it, or anyone reaching the ICAP port could have any URL signed for any address and
   * make the portal a phishing hop again.
   */
  proxyKey: Pick<ProxyKeyCheck, 'matches'>;
  /** Told when a URL would have been signed but the request had no key, or another one (the caller logs it). */
  withoutKey?: () => void;
}

const NO_CHANGE: Decision = { kind: 'no-change' };

/**
 * Synchronous unless the registration mode's MAC lookup is needed (then a promise that never rejects), so
 * the other modes answer without a turn of the event loop.
 */
export function decidePortal(input: PortalInput): Decision | Promise<Decision> {
  const { settings, request } = input;
  if (settings.mode === 'off') return NO_CHANGE;
  const ip = request.clientIp === undefined ? undefined : normaliseIp(request.clientIp);
  if (identified(request, ip, input.isIdentified)) return NO_CHANGE;
  const url = parseTarget(request.target, request.host);
  // Only a URL its Host header agrees with is let through by where it goes: Squid checks that Host against
  // the intercepted connection's real destination (host_verify_strict), but keeps an absolute URL the client
  // wrote as it is, and checks nothing when there is no Host. Without this, `GET http://<walled garden>/`
  // sent to any address would be let through to that address.
  const vouched = url !== undefined && hostAgrees(url, request.host);
  if (vouched && isOwnSite(url, input.baseUrl)) return NO_CHANGE;
  const probe = url !== undefined && isCaptivePortalProbe(url.path);
  if (!probe && vouched && allowedDestination(url, input)) return NO_CHANGE;
  const { isRegisteredDevice } = input;
  if (settings.mode !== 'registration' || ip === undefined || isRegisteredDevice === undefined)
    return satisfy(input, ip, url, probe);
  return isRegisteredDevice(ip).then(
    (registered) => (registered ? NO_CHANGE : satisfy(input, ip, url, probe)),
    () => satisfy(input, ip, url, probe),
  );
}

/** Squid names a user (`-` is how Squid writes "none" in its own formats), or a session exists for the address. */
function identified(
  request: PortalRequest,
  ip: string | undefined,
  isIdentified: (ip: string) => boolean,
): boolean {
  const user = request.clientUsername;
  if (user !== undefined && user !== '' && user !== '-') return true;
  return ip !== undefined && isIdentified(ip);
}

/** The directory (host, any port) and the walled garden. */
function allowedDestination(url: TargetUrl, input: PortalInput): boolean {
  const ip = normaliseIp(url.host);
  const host = ip ?? url.host;
  for (const entry of input.directoryHosts) {
    if (canonicalHost(entry) === host) return true;
  }
  return inWalledGarden(input.settings.walledGarden, host, ip !== undefined);
}

// ---------------------------------------------------------------------------------------------------------
// The walled garden

/**
 * The walled garden's CIDRs made ready for lookups once per settings object (settings change rarely,
 * requests come by the thousand). Host names are matched as lib/portal/settings.ts says: exact, or below a
 * "*.suffix" entry (not the suffix itself); CIDRs only when the URL names an address (no DNS lookup here).
 */
const gardens = new WeakMap<PortalDecisionSettings['walledGarden'], CidrSet>();

function inWalledGarden(
  walledGarden: PortalDecisionSettings['walledGarden'],
  host: string,
  isAddress: boolean,
) {
  if (!isAddress) return walledHostMatches(host, walledGarden.hosts);
  let cidrs = gardens.get(walledGarden);
  if (cidrs === undefined) {
    cidrs = new CidrSet(walledGarden.cidrs);
    gardens.set(walledGarden, cidrs);
  }
  return cidrs.has(host);
}
