import { isIP } from 'node:net';
import type { Config } from '../lib/config/schema.ts';
import { DoormanError } from '../lib/errors.ts';
import { helperSocket, type HelperKind } from '../lib/seamless/paths.ts';
import { PROXY_CLIENT_HEADER, PROXY_ICAP_HEADER } from '../lib/security/proxy-key.ts';

/** What the generated file needs from this machine. */
export interface Runtime {
  /** The project's root directory (the shim is its dist/bin/doorman-shim). */
  root: string;
  /** The proxy key (lib/security/proxy-key.ts): Squid's proof, to Doorman, that it wrote the client address. */
  proxyKey: string;
  /**
   * This host's own addresses (os.networkInterfaces()), which nothing may be tunnelled to; loopback and the
   * unspecified addresses are always added.
   */
  hostAddresses: readonly string[];
}

export interface IncludeOptions {
  /** Also write an access log in the `doorman` format to this file. */
  accessLog?: string;
  /** A directory is applied: add Basic authentication and the group ACL against it. */
  directory?: boolean;
  /**
   * Seamless authentication is enabled (the proxy joined the domain: lib/store/seamless-settings-store.ts):
   * offer Negotiate (Kerberos) and NTLM before Basic.
   */
  seamless?: boolean;
  /**
   * Also write the http_access lines (default). Without them the file only defines helpers and ACLs, for an
   * administrator who writes every access rule in their own order.
   */
  access?: boolean;
  /**
   * The captive portal: an intercept port, and the ICAP service (icap-server/) that sends its unidentified
   * clients to the splash page. Without it, no intercept or ICAP line is written.
   */
  portal?: PortalOptions;
}

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

/** Names this file defines; an admin's squid.conf refers to them. */
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
function token(value: string, what: string): string {
  if (!/^[^\s"'\\#]+$/.test(value))
    throw new Error(`${what} ${JSON.stringify(value)} cannot be written in squid.conf`);
  return value;
}

/**
 * The include file for an existing squid.conf: the session helper, an ACL for identified clients, Squid's
 * standard protections (no tunnels but to TLS ports, none to this host), access to Doorman itself for everyone
 * (so an unidentified client can log in through the proxy), the client address for Doorman's site only, and a
 * log format with the user. Definitions first, access rules last (--acls-only leaves the rules out).
 */
export function generateInclude(config: Config, runtime: Runtime, options: IncludeOptions = {}): string {
  const s = config.squid;
  const groups = config.squid.groups.allow;
  if (groups.length > 0 && !options.directory) {
    throw new DoormanError(
      'CONFIG_INVALID',
      `squid.groups.allow names groups (${groups.join(', ')}) but no directory is applied, so nobody could be ` +
        'checked against them: apply one first (doorman directory set), or empty squid.groups.allow',
    );
  }
  // Every helper is the shim (native/doorman-shim.c, about 1 MB a child), relaying to authd, which `doorman
  // serve` runs (helpers/authd/main.ts): one Node process for every child of every kind.
  const shim = (kind: HelperKind) =>
    [
      token(`${runtime.root}/dist/bin/doorman-shim`, 'shim path'),
      ...(kind === 'negotiate' || kind === 'ntlm' ? [] : ['--concurrent']),
      token(helperSocket(config.stateDir, kind), 'socket path'),
    ].join(' ');
  const authenticate = (options.directory ?? false) || (options.seamless ?? false);
  const base = new URL(config.baseUrl);
  const lines = [
    '# Doorman: user identification for Squid. Generated by `doorman squid-conf`; regenerate, do not edit.',
    '# Include it in squid.conf before your own http_access rules (Debian: /etc/squid/conf.d/doorman.conf).',
    "# It holds the proxy key (below): keep it mode 0600, root's (Squid reads its configuration as root).",
    '',
    '# Session lookup by client address (and MAC where Squid has one). Answers are cached for ttl seconds,',
    '# so a logout or a user switch on an address shows after at most ttl (+1: Squid counts whole seconds);',
    '# negative_ttl delays a new login. Every helper here is the shim: `doorman serve` must be running.',
    `external_acl_type ${names.helper} ttl=${s.ttl} negative_ttl=${s.negativeTtl} concurrency=${s.concurrency} ` +
      `children-max=${s.childrenMax} children-startup=1 children-idle=1 %SRC %>eui ${shim('session')}`,
    `acl ${names.identified} external ${names.helper}`,
    '',
    '# Doorman itself, matched on the URL as written (no DNS lookup before every request, as a dst or',
    '# dstdomain acl would need). Its port first: the pattern, checked three times a request, then runs only',
    "# for requests to Doorman's port (a regex on every URL cost Squid about 1 % of its CPU per request).",
    `acl ${names.sitePort} port ${sitePort(base)}`,
    `acl ${names.siteUrl} url_regex -i ${siteRegex(base)}`,
    `acl ${names.site} all-of ${names.sitePort} ${names.siteUrl}`,
    ...(options.seamless ? seamlessDefinitions(config, shim) : []),
    ...(options.directory ? basicDefinitions(config, shim) : []),
    ...(authenticate ? [`acl ${names.authenticated} proxy_auth REQUIRED`] : []),
    ...(options.directory ? groupDefinitions(config, shim) : []),
    '',
    "# Squid's standard protections, under names of Doorman's own (Debian's squid.conf has the same): tunnels",
    '# only to TLS ports, requests only to safe ports, and no tunnel to this host itself (its own services, and',
    '# Doorman, which must see each client through plain HTTP). The addresses are those of this host when the',
    '# file was made: regenerate it when they change.',
    `acl ${names.connect} method CONNECT`,
    `acl ${names.tlsPorts} port 443`,
    `acl ${names.safePorts} port 80 21 443 70 210 1025-65535 280 488 591 777`,
    `acl ${names.proxyHost} dst ${proxyHostAddresses(runtime.hostAddresses).join(' ')}`,
    ...(options.portal === undefined ? [] : portalDefinitions(options.portal, runtime.proxyKey)),
    '',
    "# Doorman's site, and only it, gets the client's address, with the proxy key that proves Squid wrote it",
    '# (a header of the same name from a client is removed first, everywhere). forwarded_for is left as you set it.',
    '# The key must reach Doorman and nobody else, so it is sent only (a) on requests that reached Squid at',
    "# one of this host's addresses (explicit clients) or, intercepted, on their way to Doorman's own address:",
    '# an intercepted request is sent where its client was going, whatever its Host header names, and the key',
    '# must not go with a request that names Doorman but goes elsewhere (localip is the intercepted destination);',
    '# and (b) never through a cache_peer.',
    `acl ${names.toProxy} localip ${localAddresses(config, runtime.hostAddresses).join(' ')}`,
    `request_header_access ${PROXY_CLIENT_HEADER} deny all`,
    `request_header_add ${PROXY_CLIENT_HEADER} "${proxyKey(runtime.proxyKey)} %>a" ${names.site} ${names.toProxy}`,
    `always_direct allow ${names.site}`,
    '',
    "# Squid's native format, with the user as Doorman's helpers named it, URL-escaped (see docs/security.md):",
    `logformat ${names.logFormat} %ts.%03tu %6tr %>a %Ss/%03>Hs %<st %rm %ru ${USER_FORMAT} %Sh/%<a %mt`,
    ...(options.accessLog === undefined
      ? []
      : [`access_log stdio:${token(options.accessLog, 'access log path')} ${names.logFormat}`]),
    ...((options.access ?? true) ? accessRules(config, authenticate, options.portal !== undefined) : []),
  ];
  return `${lines.join('\n')}\n`;
}

function proxyKey(key: string): string {
  if (!/^[A-Za-z0-9_-]{43}$/.test(key)) throw new Error('proxy key: not 43 base64url characters');
  return key;
}

/** Loopback, the unspecified addresses (a tunnel to 0.0.0.0 reaches this host too) and this host's own. */
function proxyHostAddresses(own: readonly string[]): string[] {
  const always = ['127.0.0.0/8', '0.0.0.0', '::1', '::'];
  const extra = own.filter((a) => isIP(a) !== 0 && !always.includes(a) && !a.startsWith('127.'));
  return [...always, ...new Set(extra)];
}

/** This host's addresses, and Doorman's where the config names them (an IP base URL, specific listen hosts). */
function localAddresses(config: Config, own: readonly string[]): string[] {
  const base = new URL(config.baseUrl).hostname.replace(/^\[(.*)\]$/, '$1');
  const doorman = [base, ...config.listen.map((l) => l.host)].filter(
    (a) => isIP(a) !== 0 && a !== '0.0.0.0' && a !== '::' && !a.startsWith('127.'),
  );
  return [...new Set([...proxyHostAddresses(own).filter((a) => a !== '0.0.0.0' && a !== '::'), ...doorman])];
}

/**
 * The access rules, in the order Squid must meet them: the protections, Doorman's site for everyone, then
 * identified clients (in squid.groups.allow, when it names groups: "only Staff may browse" means everyone,
 * however identified, and an identified client outside the groups is refused, not asked for a password),
 * then Basic logins under the same rule.
 */
function accessRules(config: Config, authenticate: boolean, portal: boolean): string[] {
  const grouped = config.squid.groups.allow.length > 0;
  const inGroup = grouped ? ` ${names.allowedGroup}` : '';
  return [
    '',
    '# Access. Squid stops at the first http_access line that matches: what to do with clients that are not',
    '# allowed here is for the rules after this include (typically "http_access deny all").',
    `http_access deny !${names.safePorts}`,
    `http_access deny ${names.connect} !${names.tlsPorts}`,
    `http_access deny ${names.connect} ${names.proxyHost}`,
    // A tunnel carries no header Squid can add: Doorman could not tell whose it is (and would refuse it).
    `http_access deny ${names.connect} ${names.site}`,
    `http_access allow ${names.site}`,
    `http_access allow ${names.identified}${inGroup}`,
    ...(grouped ? [`http_access deny ${names.identified}`] : []),
    // Unidentified intercepted clients must be allowed here to reach ICAP at all (a request http_access
    // denies is never adapted); ICAP then answers them with the splash page. Before the Basic line: Squid
    // cannot ask an intercepted client for a proxy password, and says so in cache.log on every request.
    ...(portal ? [`http_access allow ${names.intercepted}`] : []),
    ...(authenticate ? [`http_access allow ${names.authenticated}${inGroup}`] : []),
  ];
}

/**
 * The captive portal's definitions: the intercept port, an acl for what arrived there, and the ICAP service
 * for intercepted clients without a session. bypass=0: with the service down, such a client gets Squid's
 * error page, never the web. Identified clients never reach ICAP (adaptation_access), so their requests cost
 * no ICAP round trip; the service checks again anyway (Squid may have an answer cached for ttl seconds).
 */
function portalDefinitions(portal: PortalOptions, key: string): string[] {
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

/** Doorman's port: every URL siteRegex matches names it (Squid leaves a scheme's own port out of the URL). */
function sitePort(base: URL): string {
  return base.port || (base.protocol === 'https:' ? '443' : '80');
}

/**
 * Requests for Doorman's own base URL: `http://host[:port]/…` as Squid writes a URL (the port only when it is
 * not the scheme's), or `host:port`, the URL of a CONNECT to it, which the access rules refuse.
 */
function siteRegex(base: URL): string {
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // hostname keeps IPv6 brackets, as Squid writes them; base.port is '' for the scheme's own port
  const hostPort = `${base.hostname}:${sitePort(base)}`;
  const url = `${base.protocol}//${base.port === '' ? base.hostname : hostPort}/`;
  return `^(${escape(url)}|${escape(hostPort)}$)`;
}

/**
 * Negotiate (Kerberos, and NTLM inside SPNEGO) and NTLM, once the proxy has joined the domain. Squid offers
 * the schemes in the order their auth_param lines first appear: these before Basic, so a domain client never
 * falls back to a password prompt. Stateful: no concurrency, one handshake per child (Squid reserves it from
 * YR to the final answer); keep_alive lets the NTLM legs and the 407 share a connection.
 */
function seamlessDefinitions(config: Config, shim: (kind: HelperKind) => string): string[] {
  const { negotiateChildren, ntlmChildren } = config.squid.seamless;
  return [
    '',
    '# Seamless authentication: Windows clients of the domain are identified by their logon, with no prompt.',
    '# Removing these lines needs a Squid restart (reconfigure cannot unconfigure a scheme).',
    `auth_param negotiate program ${shim('negotiate')}`,
    `auth_param negotiate children ${negotiateChildren} startup=1 idle=1`,
    'auth_param negotiate keep_alive on',
    // The client's address after each token, for authd's count of clients whose handshakes carry NTLM (the
    // doctor names them: they address the proxy by its IP, so Kerberos cannot work for them).
    'auth_param negotiate key_extras "%>a"',
    `auth_param ntlm program ${shim('ntlm')}`,
    `auth_param ntlm children ${ntlmChildren} startup=1 idle=1`,
    'auth_param ntlm keep_alive on',
    'auth_param ntlm key_extras "%>a"',
  ];
}

/**
 * Basic authentication against the applied directory. Clients without a session are asked for a password
 * (407); `acl doorman_authenticated proxy_auth REQUIRED` follows, for Basic and the seamless schemes alike.
 */
function basicDefinitions(config: Config, shim: (kind: HelperKind) => string): string[] {
  const b = config.squid.basicAuth;
  return [
    '',
    '# Password checks (Basic) against the directory. A wrong password gets 407 again; a directory that',
    "# cannot be reached is the helper's fault (BH), not the user's.",
    `auth_param basic program ${shim('basic')}`,
    `auth_param basic children ${b.children} startup=1 idle=1 concurrency=${b.concurrency}`,
    `auth_param basic realm ${b.realm}`,
    `auth_param basic credentialsttl ${b.credentialsTtl} seconds`,
    // The client's address for the helper, which limits wrong passwords per address as well as per account
    // (passwordGuessing). Squid also keys its credentials cache by it: one check per user and address.
    'auth_param basic key_extras "%>a"',
  ];
}

/**
 * Groups against the applied directory. The group helper gets the user and the acl's group names: use it in
 * your own rules too, `acl staff external doorman_group "Staff Users"` (quoted names need
 * configuration_includes_quoted_values).
 */
function groupDefinitions(config: Config, shim: (kind: HelperKind) => string): string[] {
  const g = config.squid.groups;
  return [
    '',
    '# Group membership (nested groups included) of the user: %un is the login (Basic, Negotiate, NTLM) or, for',
    "# a client identified by address, the session's user (after doorman_identified on the same line).",
    `external_acl_type ${names.groupHelper} ttl=${g.ttl} negative_ttl=${g.negativeTtl} concurrency=${g.concurrency} ` +
      `children-max=${g.childrenMax} children-startup=1 %un ${shim('group')}`,
    ...(g.allow.length > 0
      ? [
          'configuration_includes_quoted_values on',
          `acl ${names.allowedGroup} external ${names.groupHelper} ${g.allow.map((name) => `"${name}"`).join(' ')}`,
          'configuration_includes_quoted_values off',
        ]
      : []),
  ];
}
