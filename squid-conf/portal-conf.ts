import { isIP } from 'node:net';
import { PROXY_ICAP_HEADER } from '../lib/security/proxy-key.ts';
import { names, proxyKey, token } from './conf-tokens.ts';

/** The captive portal's part of the include file (generate.ts): the intercept ports and the ICAP service. */

export interface PortalOptions {
  /** The `http_port … intercept` that the REDIRECT rules send port 80 to. */
  interceptPort: number;
  /** Where Doorman's ICAP service listens. */
  icap: { host: string; port: number };
  /** Opt-in HTTPS interception (needs Squid built with OpenSSL); without it port 443 is not Squid's. */
  https?: HttpsInterceptOptions;
}

export interface HttpsInterceptOptions {
  /** The `https_port … intercept ssl-bump` that the REDIRECT rules send port 443 to. */
  port: number;
  /**
   * Unidentified clients: bump (decrypt, so ICAP's redirect reaches them inside their TLS; they must trust
   * the CA) or refuse (their handshake is closed at once). Identified clients are always spliced.
   */
  mode: 'bump' | 'refuse';
  /** PEM with the signing CA's key and certificate. */
  caFile: string;
  /** security_file_certgen's store of minted certificates (bump only). */
  certDb: string;
  /** security_file_certgen itself. */
  certgen: string;
}

/**
 * The captive portal's definitions: the intercept port, an acl for what arrived there, and the ICAP service
 * for intercepted clients without a session. bypass=0: with the service down, such a client gets Squid's
 * error page, never the web. Identified clients never reach ICAP (adaptation_access), so their requests cost
 * no ICAP round trip; the service checks again anyway (Squid may have an answer cached for ttl seconds).
 */
export function portalDefinitions(portal: PortalOptions, key: string): string[] {
  const port = (value: number, what: string) => {
    if (!Number.isInteger(value) || value < 1 || value > 65535)
      throw new Error(`${what} ${value}: expected a port number from 1 to 65535`);
    return value;
  };
  const host = portal.icap.host;
  if (isIP(host) === 0 && !/^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$/.test(host))
    throw new Error(`ICAP host ${JSON.stringify(host)}: expected an IP address or a host name`);
  const authority = `${isIP(host) === 6 ? `[${host}]` : host}:${port(portal.icap.port, 'ICAP port')}`;
  const https = portal.https;
  if (https !== undefined) port(https.port, 'HTTPS intercept port');
  return [
    '',
    '# Captive portal: clients sent here by the REDIRECT rules (port 80 of the LAN) are intercepted; those',
    "# without a session go to Doorman's ICAP service, which sends them to the splash page (302, or 511 for",
    '# what is not a page load) or lets them through (Doorman itself, the directory, the walled garden).',
    `http_port ${port(portal.interceptPort, 'intercept port')} intercept name=${names.interceptPort}`,
    '# An intercepted request goes where its client connected, whatever its Host names: a client naming Doorman',
    '# or a walled-garden host in Host while connecting elsewhere would get past the portal. Strict, Squid',
    "# answers 409 when Host does not resolve (by Squid's DNS) to the address connected to, so intercepted",
    "# clients whose DNS answers differ from Squid's may get 409. This setting is global: explicit-proxy",
    '# requests whose Host differs from their URL get 409 too.',
    'host_verify_strict on',
    ...(https === undefined ? [] : httpsDefinitions(https)),
    `acl ${names.intercepted} myportname ${names.interceptPort}${https === undefined ? '' : ` ${names.interceptTlsPort}`}`,
    'icap_enable on',
    'icap_send_client_ip on',
    'icap_send_client_username on',
    'icap_client_username_header X-Client-Username',
    `icap_service ${names.icapService} reqmod_precache bypass=0 icap://${authority}/reqmod`,
    "# Squid's proof, to the ICAP service, that it wrote X-Client-IP: the proxy key, as an ICAP header. Without it",
    '# the redirect carries no signed url= (anyone reaching the ICAP port could otherwise have a URL signed for',
    "# any address) and the connection may not idle long. Sent only to Doorman's service (adaptation_service",
    '# matches the services this transaction has used so far: do not chain another service after it).',
    `acl ${names.toIcapService} adaptation_service ${names.icapService}`,
    `adaptation_meta ${PROXY_ICAP_HEADER} "${proxyKey(key)}" ${names.toIcapService}`,
    // Every intercepted TLS connection passes http_access and adaptation first as a made-up "CONNECT ip:443":
    // a 302 for it would be written as plain HTTP into the client's TLS handshake. Only the requests inside
    // (bumped) go to ICAP. Harmless without ssl-bump: nothing else sends CONNECT to an intercept port.
    `adaptation_access ${names.icapService} deny ${names.connect}`,
    `adaptation_access ${names.icapService} allow ${names.intercepted} !${names.identified}`,
    `adaptation_access ${names.icapService} deny all`,
  ];
}

/**
 * HTTPS interception with ssl-bump (Squid built with OpenSSL). Identified clients' TLS is never decrypted:
 * spliced, their connection is a plain tunnel to the origin. Unidentified clients are bumped (their requests
 * then reach ICAP, which answers with the splash redirect) or refused. The identified acl is an external one,
 * and external ACLs see no client at step 1 (the helper gets "::" and "-"), so the decision waits for step 2:
 * peek at the ClientHello first. Bumping at step 2 makes Squid connect to the origin and mimic its
 * certificate before answering (with the origin down the client gets Squid's 503, not the portal): accepted,
 * see docs/captive-portal.md ("HTTPS (optional)"). Refusing mints nothing (no certificate helper, no cert DB), but
 * Squid wants a certificate on every ssl-bump port all the same: the CA's, never shown to a client.
 */
function httpsDefinitions(https: HttpsInterceptOptions): string[] {
  const ca = token(https.caFile, 'CA file');
  const bump = https.mode === 'bump';
  return [
    '# HTTPS (port 443 REDIRECTed here). NEEDS SQUID BUILT WITH OPENSSL (Debian package squid-openssl): the',
    '# GnuTLS build (package squid) stops with "Unknown https_port option \'ssl-bump\'". Identified clients are',
    ...(bump
      ? [
          '# spliced (never decrypted); unidentified ones are bumped, so that the splash redirect reaches them:',
          "# they must trust this CA's certificate, or they see a certificate warning instead of the splash page.",
        ]
      : [
          '# spliced (never decrypted); unidentified ones are refused: their TLS handshake is closed at once.',
        ]),
    `https_port ${https.port} intercept ssl-bump name=${names.interceptTlsPort} tls-cert=${ca} ` +
      (bump
        ? 'generate-host-certificates=on dynamic_cert_mem_cache_size=4MB'
        : 'generate-host-certificates=off'),
    ...(bump
      ? [
          `sslcrtd_program ${token(https.certgen, 'certgen path')} -s ${token(https.certDb, 'cert DB path')} -M 4MB`,
        ]
      : []),
    // Only this port's connections: ssl_bump rules are global, and an administrator's own ssl-bump ports
    // (after this include) keep their own rules.
    `acl ${names.interceptedTls} myportname ${names.interceptTlsPort}`,
    `acl ${names.step1} at_step SslBump1`,
    `ssl_bump peek ${names.interceptedTls} ${names.step1}`,
    `ssl_bump splice ${names.interceptedTls} ${names.identified}`,
    `ssl_bump ${bump ? 'bump' : 'terminate'} ${names.interceptedTls}`,
  ];
}
