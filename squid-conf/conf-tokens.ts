/**
 * What the lines `doorman squid-conf` writes are made of: the names they define (an admin's squid.conf refers
 * to them), the log format's user, and the checks every value written as a squid.conf token goes through.
 */

/** Names the generated file defines; an admin's squid.conf refers to them. */
export const names = {
  helper: 'doorman_session',
  identified: 'doorman_identified',
  groupHelper: 'doorman_group',
  authenticated: 'doorman_authenticated',
  allowedGroup: 'doorman_allowed_group',
  site: 'doorman_site',
  sitePort: 'doorman_site_port',
  siteUrl: 'doorman_site_url',
  connect: 'doorman_connect',
  tlsPorts: 'doorman_tls_ports',
  safePorts: 'doorman_safe_ports',
  proxyHost: 'doorman_proxy_host',
  toProxy: 'doorman_to_proxy',
  interceptPort: 'doorman_intercept',
  interceptTlsPort: 'doorman_intercept_tls',
  interceptedTls: 'doorman_intercepted_tls',
  step1: 'doorman_step1',
  intercepted: 'doorman_intercepted',
  icapService: 'doorman_portal',
  toIcapService: 'doorman_to_portal',
  logFormat: 'doorman',
} as const;

/**
 * The user as Doorman's helpers named it (their user=, which Squid keeps as the note "user"), URL-escaped by
 * Squid's `%#` (RFC 1738: "%" itself becomes %25, a space %20, non-ASCII bytes %XX), so that every name has
 * exactly one form in the log and the reply header, and `a b` and `a%20b` stay two names. Squid's own `%un`
 * would keep a Basic login as typed (EXAMPLE\alice), and its `%[un` leaves spaces in.
 */
export const USER_FORMAT = '%#{user}note';

/** A squid.conf token must not contain whitespace or quotes; paths with them cannot be used there. */
export function token(value: string, what: string): string {
  if (!/^[^\s"'\\#]+$/.test(value))
    throw new Error(`${what} ${JSON.stringify(value)} cannot be written in squid.conf`);
  return value;
}

/** The proxy key as written into squid.conf: 43 base64url characters, nothing else. */
export function proxyKey(key: string): string {
  if (!/^[A-Za-z0-9_-]{43}$/.test(key)) throw new Error('proxy key: not 43 base64url characters');
  return key;
}
