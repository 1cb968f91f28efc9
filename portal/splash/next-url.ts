import { MAX_SIGNED_URL as MAX_ORIGINAL_URL } from '../../lib/security/portal-url-signature.ts';
import { showValue } from '../../lib/errors.ts';

/**
 * Where the browser may go after the splash page: only to the page it was on its way to, and only if that is an
 * absolute http(s) URL, so the splash page is never an open redirect to `javascript:`, `data:` or another
 * scheme. The ICAP answer (icap-server/portal-answer.ts) sends such URLs only, at most MAX_ORIGINAL_URL long;
 * the check here is for what a crafted link might carry instead.
 *
 * Refused: anything not starting `http://` or `https://` (any case), so no other scheme, no protocol-relative
 * `//host` and no `http:host`; white space or control characters anywhere (the WHATWG parser would quietly drop
 * some of them, hiding a scheme); user:password@ (a phishing disguise, and the ICAP strips it anyway); over the
 * length cap. A character scan and one URL parse: linear in the length, which is capped first.
 */
export type NextUrl = { ok: true; url: string } | { ok: false; message: string };

const ALLOWED = 'an absolute http:// or https:// URL';

export function checkNextUrl(raw: string): NextUrl {
  const refuse = (why: string): NextUrl => ({ ok: false, message: `${showValue(raw)} ${why}` });
  if (raw.length > MAX_ORIGINAL_URL) return refuse(`is longer than ${MAX_ORIGINAL_URL} characters`);
  if (!/^https?:\/\//i.test(raw)) return refuse(`is not ${ALLOWED}`);
  if (/[\p{Cc}\p{Zs}\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]/u.test(raw)) {
    return refuse('contains white space or control characters');
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse(`is not ${ALLOWED}`);
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    return refuse(`is not ${ALLOWED}`);
  }
  if (url.username !== '' || url.password !== '') return refuse('contains a user name or password');
  // The serialised form is ASCII only (punycode host, percent-encoded path): safe for a Location header.
  if (url.href.length > MAX_ORIGINAL_URL) return refuse(`is longer than ${MAX_ORIGINAL_URL} characters`);
  return { ok: true, url: url.href };
}
