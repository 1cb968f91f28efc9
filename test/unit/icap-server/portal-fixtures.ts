import {
  decidePortal,
  type PortalDecisionSettings,
  type PortalInput,
  type PortalRequest,
} from '../../../icap-server/decision.ts';
import type { Decision } from '../../../icap-server/server.ts';
import { ManualClock } from '../../../lib/clock.ts';
import { PortalUrlSigner } from '../../../lib/security/portal-url-signature.ts';
import { ProxyKeyCheck } from '../../../lib/security/proxy-key.ts';

/**
 * The captive portal's decision as the tests drive it: an unidentified client's page load, changed by what
 * each test states, and the answers it expects.
 */
export const BASE = 'http://doorman.example.lan:8180/';
export const PORTAL = `${BASE}portal/`;
export const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8';
export const CLIENT = '10.91.0.2';
const clock = new ManualClock(Date.UTC(2026, 5, 1, 9));
export const SIGNER = new PortalUrlSigner('a secret of the test', clock);
/** The proxy key Squid sends as X-Doorman-Key (adaptation_meta). */
export const KEY = 'k'.repeat(43);
export const KEY_CHECK = new ProxyKeyCheck(KEY);

export const settings = (
  garden: Partial<PortalDecisionSettings['walledGarden']> = {},
): PortalDecisionSettings => ({
  mode: 'authentication',
  walledGarden: { hosts: [], cidrs: [], ...garden },
});

/** The decision, which must have been made synchronously (every mode but registration's MAC lookup). */
export function sync(decision: Decision | Promise<Decision>): Decision {
  if (decision instanceof Promise) throw new Error('expected a synchronous decision');
  return decision;
}

/** An unidentified client's page load of http://example.com/page?a=1, changed by `request` and `input`. */
export function decide(request: Partial<PortalRequest> = {}, input: Partial<PortalInput> = {}): Decision {
  return sync(decideAny(request, input));
}

export function decideAny(
  request: Partial<PortalRequest> = {},
  input: Partial<PortalInput> = {},
): Decision | Promise<Decision> {
  return decidePortal({
    settings: settings(),
    baseUrl: BASE,
    directoryHosts: ['dc1.example.lan'],
    isIdentified: () => false,
    portalUrls: SIGNER,
    proxyKey: KEY_CHECK,
    ...input,
    request: {
      clientIp: '10.91.0.2',
      clientUsername: undefined,
      proxyKey: KEY,
      method: 'GET',
      target: 'http://example.com/page?a=1',
      accept: BROWSER_ACCEPT,
      ...request,
      // As a browser writes it: the target's own authority, unless the test says otherwise.
      host: 'host' in request ? request.host : authorityOf(request.target ?? 'http://example.com/'),
    },
  });
}

/** The authority of an absolute URL as written ("host:port", "[v6]:port"), or undefined. */
function authorityOf(target: string): string | undefined {
  const start = target.indexOf('://');
  if (start < 0) return undefined;
  const rest = target.slice(start + 3);
  const end = rest.search(/[/?#]/);
  return end < 0 ? rest : rest.slice(0, end);
}

/** The splash page's address for `url`, signed for the client at `ip` (see portal-url-signature.ts). */
export const portalFor = (url: string, ip = CLIENT) =>
  `${PORTAL}?url=${encodeURIComponent(url)}&sig=${SIGNER.sign(url, ip)}`;
export const redirectTo = (url: string | undefined): Decision => ({
  kind: 'respond',
  status: 302,
  headers: { Location: url === undefined ? PORTAL : portalFor(url), 'Cache-Control': 'no-store' },
});
export const NO_CHANGE: Decision = { kind: 'no-change' };
export const status = (decision: Decision) => (decision.kind === 'respond' ? decision.status : 204);
