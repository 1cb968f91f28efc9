import { MAX_SIGNED_URL, PORTAL_URL_SIGNATURE_FIELD } from '../lib/security/portal-url-signature.ts';
import type { Decision } from './server.ts';
import { escapeHtml } from '../portal/admin/html.ts';
import { acceptsHtml } from './accept-header.ts';
import type { PortalInput } from './decision.ts';
import type { TargetUrl } from './target-url.ts';

/** Longest original URL carried in ?url=; a longer one is dropped (the portal then lands on its own page). */
export const MAX_ORIGINAL_URL = MAX_SIGNED_URL;

/** The answer for an unidentified client: 302 to the splash page (page loads and OS probes) or 511. */
export function satisfy(
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
