import { normaliseIp } from '../lib/net/address.ts';
import { CidrSet, walledHostMatches, type PortalSettings } from '../lib/portal/settings.ts';
import {
  MAX_SIGNED_URL,
  PORTAL_URL_SIGNATURE_FIELD,
  type PortalUrlSigner,
} from '../lib/security/portal-url-signature.ts';
import type { ProxyKeyCheck } from '../lib/security/proxy-key.ts';
import type { Decision } from './server.ts';
import { escapeHtml } from '../portal/admin/html.ts';
import { isCaptivePortalProbe } from './captive-probes.ts';

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

/** Longest original URL carried in ?url=; a longer one is dropped (the portal then lands on its own page). */
export const MAX_ORIGINAL_URL = MAX_SIGNED_URL;
/** Longest Accept header parsed; a longer one is not a page load (browsers send under 200 characters). */
export const MAX_ACCEPT = 1024;

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

/** The answer for an unidentified client: 302 to the splash page (page loads and OS probes) or 511. */
function satisfy(
  input: PortalInput,
  ip: string | undefined,
  url: TargetUrl | undefined,
  probe: boolean,
): Decision {
  const { request } = input;
  const portal = `${input.baseUrl}portal/${portalQuery(input, ip, url)}`;
  const method = request.method;
  if (probe || ((method === 'GET' || method === 'HEAD') && acceptsHtml(request.accept)))
    return {
      kind: 'respond',
      status: 302,
      headers: { Location: portal, 'Cache-Control': 'no-store' },
    };
  return {
    kind: 'respond',
    status: 511,
    headers: { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' },
    // A HEAD answer has no body (RFC 9110 §9.3.2).
    ...(method === 'HEAD' ? {} : { body: networkAuthenticationPage(portal) }),
  };
}

/**
 * `?url=<original>&sig=<signature>`, or nothing: without a client address the signature could not be bound
 * to the device, an over-long URL is not carried, and without Squid's key the address is anyone's word.
 */
function portalQuery(input: PortalInput, ip: string | undefined, url: TargetUrl | undefined): string {
  const original = url?.href;
  if (original === undefined || original.length > MAX_ORIGINAL_URL || ip === undefined) return '';
  const key = input.request.proxyKey;
  if (key === undefined || !input.proxyKey.matches(key)) {
    input.withoutKey?.();
    return '';
  }
  const sig = input.portalUrls.sign(original, ip);
  return `?url=${percentEncode(original)}&${PORTAL_URL_SIGNATURE_FIELD}=${sig}`;
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

// ---------------------------------------------------------------------------------------------------------
// The request's URL

/** Where a request goes, and the URL to send the client back to after the portal (http and https only). */
export interface TargetUrl {
  /** Lower case, no brackets around an IPv6 literal, no trailing dot; an address in its one spelling. */
  host: string;
  /** The explicit or the scheme's port; undefined for a scheme without a known default. */
  port: number | undefined;
  /** The original URL without user info; undefined when it is not an http(s) URL. */
  href: string | undefined;
  /** The path and query as sent ("/" when the URL has none). */
  path: string;
}

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/;
/** reg-name characters (RFC 3986 §3.2.2: unreserved, pct-encoded, sub-delims). */
const REG_NAME = /^[A-Za-z0-9._~!$&'()*+,;=%-]+$/;
const PORT = /^[0-9]{1,5}$/;
const DEFAULT_PORTS: Readonly<Record<string, number>> = { http: 80, https: 443 };

/**
 * The request-target (RFC 9112 §3.2) as a URL:
 *
 *   absolute-form = absolute-URI                 ; Squid always sends this, intercepted requests included
 *   origin-form   = absolute-path [ "?" query ]  ; with Host: rebuilt as http://Host/path
 *   authority-form (CONNECT) and asterisk-form   ; no URL to go back to
 *
 * In absolute-form the Host header is ignored (RFC 9112 §3.2.2). User info (`user:pass@`) is dropped from
 * the URL to go back to: it would otherwise sit in the portal's URL and its logs.
 */
export function parseTarget(target: string, host: string | undefined): TargetUrl | undefined {
  if (target.startsWith('/')) {
    if (host === undefined) return undefined;
    const authority = parseAuthority(host, 'http');
    if (authority === undefined) return undefined;
    return { ...authority, href: `http://${host}${target}`, path: target };
  }
  const colon = target.indexOf('://');
  if (colon <= 0) return undefined;
  const scheme = target.slice(0, colon).toLowerCase();
  if (!SCHEME.test(scheme)) return undefined;
  const rest = target.slice(colon + 3);
  let end = rest.length;
  for (const stop of ['/', '?', '#']) {
    const at = rest.indexOf(stop);
    if (at >= 0 && at < end) end = at;
  }
  const userinfoEnd = rest.lastIndexOf('@', end - 1);
  const hostPort = rest.slice(userinfoEnd + 1, end);
  const authority = parseAuthority(hostPort, scheme);
  if (authority === undefined) return undefined;
  const path = end === rest.length || rest[end] !== '/' ? `/${rest.slice(end)}` : rest.slice(end);
  const href = scheme === 'http' || scheme === 'https' ? `${scheme}://${hostPort}${path}` : undefined;
  return { ...authority, href, path };
}

/** host [ ":" port ], host = IP-literal ("[" IPv6 "]") / IPv4 / reg-name. */
function parseAuthority(
  text: string,
  scheme: string,
): { host: string; port: number | undefined } | undefined {
  let host: string;
  let portText: string | undefined;
  if (text.startsWith('[')) {
    const close = text.indexOf(']');
    if (close < 0) return undefined;
    host = text.slice(1, close);
    const after = text.slice(close + 1);
    if (after !== '' && !after.startsWith(':')) return undefined;
    portText = after === '' ? undefined : after.slice(1);
    if (normaliseIp(host) === undefined || !host.includes(':')) return undefined;
  } else {
    const colon = text.lastIndexOf(':');
    host = colon < 0 ? text : text.slice(0, colon);
    portText = colon < 0 ? undefined : text.slice(colon + 1);
    if (!REG_NAME.test(host)) return undefined;
  }
  // "host:" has an empty port: the scheme's (RFC 3986 §3.2.3).
  let port = DEFAULT_PORTS[scheme];
  if (portText !== undefined && portText !== '') {
    if (!PORT.test(portText) || Number(portText) > 65535) return undefined;
    port = Number(portText);
  }
  host = canonicalHost(host);
  return host === '' ? undefined : { host, port };
}

/** The Host header names the URL's own host and port (in any of their spellings). */
function hostAgrees(url: TargetUrl, host: string | undefined): boolean {
  if (host === undefined || host.length > MAX_HOST_HEADER) return false;
  const named = parseAuthority(host, url.href?.startsWith('https:') === true ? 'https' : 'http');
  return named !== undefined && named.host === url.host && named.port === url.port;
}

/** Longest Host header compared (a DNS name is at most 253 characters, plus a port). */
const MAX_HOST_HEADER = 300;

/** Doorman's own site: the host and port of the base URL. */
function isOwnSite(url: TargetUrl, baseUrl: string): boolean {
  const site = siteOf(baseUrl);
  return url.host === site.host && url.port === site.port;
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

/** The base URL rarely changes: parsed once, not per request. */
let lastSite: { baseUrl: string; host: string; port: number | undefined } | undefined;

function siteOf(baseUrl: string): { host: string; port: number | undefined } {
  if (lastSite?.baseUrl === baseUrl) return lastSite;
  const base = new URL(baseUrl);
  const scheme = base.protocol.slice(0, -1);
  lastSite = {
    baseUrl,
    host: canonicalHost(base.hostname),
    port: base.port === '' ? DEFAULT_PORTS[scheme] : Number(base.port),
  };
  return lastSite;
}

/** Lower case, brackets and a trailing dot off, an address in its one spelling. */
function canonicalHost(text: string): string {
  let host = text.toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (host.endsWith('.')) host = host.slice(0, -1);
  return normaliseIp(host) ?? host;
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

// ---------------------------------------------------------------------------------------------------------
// Accept

/**
 * Whether the client takes text/html (RFC 9110 §12.5.1):
 *
 *   Accept      = #( media-range [ weight ] )
 *   media-range = ( "*" "/" "*" / ( type "/" "*" ) / ( type "/" subtype ) ) parameters
 *   weight      = OWS ";" OWS "q=" qvalue
 *   qvalue      = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
 *
 * The most specific range that covers text/html decides (text/html over text/* over *\/*; parameters other
 * than q are not told apart), and it must have q > 0: "text/html;q=0, *\/*" refuses HTML. No Accept at all
 * takes anything (§12.5.1). A member that does not parse is skipped; a header over MAX_ACCEPT is no page load.
 */
export function acceptsHtml(accept: string | undefined): boolean {
  if (accept === undefined) return true;
  if (accept.length > MAX_ACCEPT) return false;
  let best = 0;
  let quality = 0;
  for (const member of splitOutsideQuotes(accept, ',')) {
    const [range = '', ...params] = splitOutsideQuotes(member, ';').map((part) => part.trim());
    const slash = range.indexOf('/');
    if (slash < 0) continue;
    const type = range.slice(0, slash).toLowerCase();
    const subtype = range.slice(slash + 1).toLowerCase();
    const specificity =
      type === 'text' && subtype === 'html'
        ? 3
        : type === 'text' && subtype === '*'
          ? 2
          : type === '*' && subtype === '*'
            ? 1
            : 0;
    if (specificity === 0) continue;
    let q = 1;
    for (const param of params) {
      const eq = param.indexOf('=');
      if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'q') continue;
      q = parseQvalue(param.slice(eq + 1).trim());
      break;
    }
    if (Number.isNaN(q)) continue;
    // The same range twice: the more generous one counts.
    if (specificity > best || (specificity === best && q > quality)) {
      best = specificity;
      quality = q;
    }
  }
  return best > 0 && quality > 0;
}

const QVALUE = /^(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)$/;

function parseQvalue(text: string): number {
  return QVALUE.test(text) ? Number(text) : Number.NaN;
}

/** Split on `separator` outside double-quoted strings (a parameter value may hold a comma), by a scan. */
function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '\\') i++;
    else if (c === '"') quoted = !quoted;
    else if (!quoted && c === separator) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}

// ---------------------------------------------------------------------------------------------------------
// Answers

/**
 * The original URL as a query parameter value: every byte but the ones encodeURIComponent leaves alone
 * (A–Z a–z 0–9 - _ . ! ~ * ' ( )) as %XX. The target arrives as Latin-1 text (one character per byte), so a
 * byte past 0x7f is encoded as itself, not as the UTF-8 of its Latin-1 character: the portal decodes
 * exactly the bytes the client sent.
 */
export function percentEncode(text: string): string {
  // For ASCII, encodeURIComponent leaves exactly UNRESERVED alone and writes %XX in upper case: the same.
  if (ASCII.test(text)) return encodeURIComponent(text);
  let out = '';
  for (const byte of Buffer.from(text, 'latin1')) {
    const c = String.fromCharCode(byte);
    out += UNRESERVED.has(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

// eslint-disable-next-line no-control-regex
const ASCII = /^[\x00-\x7f]*$/;

const UNRESERVED = new Set(
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'()".split(''),
);

/** RFC 6585 §6's example, in short: say why, link to the portal (a browser showing it can follow). */
function networkAuthenticationPage(portal: string): string {
  const href = escapeHtml(portal);
  return (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    '<title>Network sign-in required</title></head>\n' +
    '<body><h1>Network sign-in required</h1>\n' +
    `<p>This network needs you to sign in first: <a href="${href}">go to the sign-in page</a>.</p>\n` +
    '</body></html>\n'
  );
}
