import { execFile } from 'node:child_process';
import { DoormanError } from '../lib/errors.ts';

/**
 * Which TLS library a Squid binary was built with, from its `squid -v` (the configure options). ssl-bump
 * needs OpenSSL (Debian package squid-openssl); the GnuTLS build (package squid) stops at the https_port line
 * with "FATAL: Unknown https_port option 'ssl-bump'", which does not say what to install.
 */
export type SquidTls = 'openssl' | 'gnutls' | 'unknown';

export function squidTls(versionOutput: string): SquidTls {
  // Options are quoted one by one ('--with-openssl' '--enable-ssl-crtd'); --without-openssl is not a match.
  if (/'--with-openssl(?:=[^']*)?'/.test(versionOutput)) return 'openssl';
  if (/'--with-gnutls(?:=[^']*)?'/.test(versionOutput)) return 'gnutls';
  return 'unknown';
}

/**
 * Refuse, before writing a single line, an ssl-bump include for a Squid that cannot run it. `squid` is the
 * binary Squid runs as (on PATH by default). A Squid that cannot be found or run is not checked: the include
 * says in a comment what it needs.
 */
export async function checkSquidForTls(squid: string): Promise<void> {
  const output = await new Promise<string | undefined>((resolve) => {
    execFile(squid, ['-v'], { encoding: 'utf8', timeout: 10_000 }, (error, stdout) =>
      resolve(error ? undefined : stdout),
    );
  });
  if (output === undefined || squidTls(output) !== 'gnutls') return;
  throw new DoormanError(
    'CONFIG_INVALID',
    `squid.intercept.httpsPort needs Squid built with OpenSSL (Debian package squid-openssl), but ${squid} is ` +
      "the GnuTLS build (its 'squid -v' has --with-gnutls, not --with-openssl; it would stop with \"Unknown " +
      "https_port option 'ssl-bump'\"): install squid-openssl (it replaces package squid), or set " +
      'squid.intercept.httpsPort to null',
  );
}
