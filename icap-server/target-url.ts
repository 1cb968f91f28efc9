import { normaliseIp } from '../lib/net/address.ts';

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
export function hostAgrees(url: TargetUrl, host: string | undefined): boolean {
  if (host === undefined || host.length > MAX_HOST_HEADER) return false;
  const named = parseAuthority(host, url.href?.startsWith('https:') === true ? 'https' : 'http');
  return named !== undefined && named.host === url.host && named.port === url.port;
}

/** Longest Host header compared (a DNS name is at most 253 characters, plus a port). */
const MAX_HOST_HEADER = 300;

/** Doorman's own site: the host and port of the base URL. */
export function isOwnSite(url: TargetUrl, baseUrl: string): boolean {
  const site = siteOf(baseUrl);
  return url.host === site.host && url.port === site.port;
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
export function canonicalHost(text: string): string {
  let host = text.toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (host.endsWith('.')) host = host.slice(0, -1);
  return normaliseIp(host) ?? host;
}
