import { createHash } from 'node:crypto';
import { PROXY_ICAP_HEADER } from '../lib/security/proxy-key.ts';
import { decidePortal, type PortalDecisionSettings, type PortalInput } from './decision.ts';
import type { IcapRequest, ReqmodRequest } from './parser.ts';
import type { Decision } from './server.ts';

/**
 * The captive portal's decision in the shape createIcapServer takes (`decide`, `istag`): reads the two ICAP
 * headers and the encapsulated request, asks decision.ts. Everything that touches state (the settings in
 * force, their version, the session lookup) is a function passed in, so this stays pure and the same code is
 * tested in-process and through Squid.
 */
export interface PortalServiceOptions {
  /** The portal settings in force now (read for every request: a change applies at once). */
  settings: () => PortalDecisionSettings;
  /**
   * A number that changes whenever the settings do (a counter or the settings row's version). It makes the
   * ISTag, so Squid re-reads OPTIONS after a change.
   */
  settingsVersion: () => number;
  /** Doorman's base URL (config baseUrl, ending in "/"). */
  baseUrl: string;
  /** The directory's host names or addresses. */
  directoryHosts: readonly string[];
  /** A live session for this normalised address. */
  isIdentified: (ip: string) => boolean;
  /**
   * Registration mode: whether the device at this normalised address has a live MAC registration (see
   * decision.ts: asked last, and a rejection counts as "no").
   */
  isRegisteredDevice?: (ip: string) => Promise<boolean>;
  /** Signs the original URL put in the splash page's address (see decision.ts). */
  portalUrls: PortalInput['portalUrls'];
  /** Checks Squid's key (X-Doorman-Key): only a request carrying it gets a signed URL (see decision.ts). */
  proxyKey: PortalInput['proxyKey'];
  /** Told when a URL would have been signed but the request had no key, or another one. */
  withoutKey?: () => void;
}

/**
 * Spread into createIcapServer's options. Synchronous (the session lookup is an in-memory or SQLite read)
 * except in registration mode when the device's MAC must be looked up.
 */
export interface PortalService {
  decide: (request: ReqmodRequest) => Decision | Promise<Decision>;
  istag: () => string;
  /** The request carries Squid's key: its connection is Squid's (see server.ts). */
  proves: (request: IcapRequest) => boolean;
}

const KEY_HEADER = PROXY_ICAP_HEADER.toLowerCase();

export function portalService(options: PortalServiceOptions): PortalService {
  // What the configuration fixes (the base URL, the directory) changes only with a restart, and may change
  // then while the settings version does not: it goes into the tag too, hashed to keep it short.
  const fixed = createHash('sha256')
    .update(JSON.stringify([options.baseUrl, options.directoryHosts]))
    .digest('base64url')
    .slice(0, 8);
  return {
    decide: (request: ReqmodRequest): Decision | Promise<Decision> =>
      decidePortal({
        settings: options.settings(),
        request: {
          clientIp: request.headers.get('x-client-ip'),
          clientUsername: request.headers.get('x-client-username'),
          proxyKey: request.headers.get(KEY_HEADER),
          method: request.http.method,
          target: request.http.target,
          host: request.http.headers.get('host'),
          accept: request.http.headers.get('accept'),
        },
        baseUrl: options.baseUrl,
        directoryHosts: options.directoryHosts,
        isIdentified: options.isIdentified,
        portalUrls: options.portalUrls,
        proxyKey: options.proxyKey,
        ...(options.withoutKey === undefined ? {} : { withoutKey: options.withoutKey }),
        ...(options.isRegisteredDevice === undefined
          ? {}
          : { isRegisteredDevice: options.isRegisteredDevice }),
      }),
    istag: () => portalIstag(fixed, options.settingsVersion()),
    proves: (request: IcapRequest): boolean => carriesProxyKey(request, options.proxyKey),
  };
}

/** The request's X-Doorman-Key is the proxy key. */
export function carriesProxyKey(request: IcapRequest, check: PortalInput['proxyKey']): boolean {
  const key = request.headers.get(KEY_HEADER);
  return key !== undefined && check.matches(key);
}

/** "dm-<8 characters>-<version>": at most 28 characters (an ISTag may have 32). */
export function portalIstag(fixed: string, version: number): string {
  if (!Number.isSafeInteger(version) || version < 0)
    throw new TypeError(`settings version ${version}: expected a whole number from 0`);
  return `dm-${fixed}-${version}`;
}
