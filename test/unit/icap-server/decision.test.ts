import { describe, expect, it } from 'vitest';
import {
  acceptsHtml,
  decidePortal,
  MAX_ACCEPT,
  MAX_ORIGINAL_URL,
  parseTarget,
  percentEncode,
  type PortalDecisionSettings,
  type PortalInput,
  type PortalRequest,
} from '../../../icap-server/decision.ts';
import { CAPTIVE_PROBES, isCaptivePortalProbe } from '../../../icap-server/captive-probes.ts';
import { IcapParser, type ReqmodRequest } from '../../../icap-server/parser.ts';
import { portalIstag, portalService } from '../../../icap-server/portal-service.ts';
import type { Decision } from '../../../icap-server/server.ts';
import { ManualClock } from '../../../lib/clock.ts';
import { PortalUrlSigner } from '../../../lib/security/portal-url-signature.ts';
import { ProxyKeyCheck } from '../../../lib/security/proxy-key.ts';
import { reqmod } from './fixtures.ts';

const BASE = 'http://doorman.example.lan:8180/';
const PORTAL = `${BASE}portal/`;
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8';
const CLIENT = '10.91.0.2';
const clock = new ManualClock(Date.UTC(2026, 5, 1, 9));
const SIGNER = new PortalUrlSigner('a secret of the test', clock);
/** The proxy key Squid sends as X-Doorman-Key (adaptation_meta). */
const KEY = 'k'.repeat(43);
const KEY_CHECK = new ProxyKeyCheck(KEY);

const settings = (garden: Partial<PortalDecisionSettings['walledGarden']> = {}): PortalDecisionSettings => ({
  mode: 'authentication',
  walledGarden: { hosts: [], cidrs: [], ...garden },
});

/** The decision, which must have been made synchronously (every mode but registration's MAC lookup). */
function sync(decision: Decision | Promise<Decision>): Decision {
  if (decision instanceof Promise) throw new Error('expected a synchronous decision');
  return decision;
}

/** An unidentified client's page load of http://example.com/page?a=1, changed by `request` and `input`. */
function decide(request: Partial<PortalRequest> = {}, input: Partial<PortalInput> = {}): Decision {
  return sync(decideAny(request, input));
}

function decideAny(
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
const portalFor = (url: string, ip = CLIENT) =>
  `${PORTAL}?url=${encodeURIComponent(url)}&sig=${SIGNER.sign(url, ip)}`;
const redirectTo = (url: string | undefined): Decision => ({
  kind: 'respond',
  status: 302,
  headers: { Location: url === undefined ? PORTAL : portalFor(url), 'Cache-Control': 'no-store' },
});
const NO_CHANGE: Decision = { kind: 'no-change' };
const status = (decision: Decision) => (decision.kind === 'respond' ? decision.status : 204);

describe('decidePortal: who is let through', () => {
  it('sends an unidentified client’s page load to the portal with the original URL', () => {
    expect(decide()).toEqual(redirectTo('http://example.com/page?a=1'));
  });

  it('changes nothing in mode off, whoever asks for whatever', () => {
    const off = { settings: { ...settings(), mode: 'off' as const } };
    expect(decide({}, off)).toEqual(NO_CHANGE);
    expect(decide({ method: 'POST', accept: 'application/json' }, off)).toEqual(NO_CHANGE);
  });

  it('redirects in every other mode', () => {
    for (const mode of ['agreement', 'authentication', 'registration'] as const)
      expect(status(decide({}, { settings: { ...settings(), mode } })), mode).toBe(302);
  });

  it('lets a client through when Squid names its user; "-" and "" name nobody', () => {
    expect(decide({ clientUsername: 'alice' })).toEqual(NO_CHANGE);
    expect(decide({ clientUsername: 'a b' })).toEqual(NO_CHANGE);
    expect(status(decide({ clientUsername: '-' }))).toBe(302);
    expect(status(decide({ clientUsername: '' }))).toBe(302);
  });

  it('lets a client through when the lookup finds a session for its address, asked in its one spelling', () => {
    const asked: string[] = [];
    const isIdentified = (ip: string) => (asked.push(ip), ip === '10.91.0.2' || ip === '2001:db8::5');
    expect(decide({}, { isIdentified })).toEqual(NO_CHANGE);
    expect(decide({ clientIp: '::ffff:10.91.0.2' }, { isIdentified })).toEqual(NO_CHANGE);
    expect(decide({ clientIp: '2001:DB8:0:0::5' }, { isIdentified })).toEqual(NO_CHANGE);
    expect(status(decide({ clientIp: '10.91.0.3' }, { isIdentified }))).toBe(302);
    expect(asked).toEqual(['10.91.0.2', '10.91.0.2', '2001:db8::5', '10.91.0.3']);
  });

  it('does not ask the lookup about a missing or malformed client address', () => {
    const isIdentified = () => {
      throw new Error('must not be asked');
    };
    expect(status(decide({ clientIp: undefined }, { isIdentified }))).toBe(302);
    expect(status(decide({ clientIp: '10.91.0.2, 10.0.0.1' }, { isIdentified }))).toBe(302);
  });

  it('lets everyone reach Doorman’s own site (host and port), not another port of that host', () => {
    expect(decide({ target: 'http://doorman.example.lan:8180/portal/?url=x' })).toEqual(NO_CHANGE);
    expect(decide({ target: 'http://DOORMAN.example.lan.:8180/api/login/' })).toEqual(NO_CHANGE);
    expect(status(decide({ target: 'http://doorman.example.lan/' }))).toBe(302);
    expect(status(decide({ target: 'http://doorman.example.lan:8181/' }))).toBe(302);
    // https base URL on its default port; an IPv6 base URL
    const https = { baseUrl: 'https://doorman.example.lan/' };
    expect(decide({ target: 'https://doorman.example.lan/portal/' }, https)).toEqual(NO_CHANGE);
    expect(decide({ target: 'https://doorman.example.lan:443/x' }, https)).toEqual(NO_CHANGE);
    expect(status(decide({ target: 'http://doorman.example.lan/' }, https))).toBe(302);
    const v6 = { baseUrl: 'http://[fd91::1]:8180/' };
    expect(decide({ target: 'http://[FD91:0::1]:8180/portal/' }, v6)).toEqual(NO_CHANGE);
  });

  it('lets everyone reach the directory, on any port', () => {
    expect(decide({ target: 'http://dc1.example.lan/' })).toEqual(NO_CHANGE);
    expect(decide({ target: 'https://DC1.example.lan:8443/pw' })).toEqual(NO_CHANGE);
    expect(status(decide({ target: 'http://dc2.example.lan/' }))).toBe(302);
    expect(decide({ target: 'http://[2001:db8::10]/' }, { directoryHosts: ['2001:DB8::10'] })).toEqual(
      NO_CHANGE,
    );
  });

  it('lets everyone reach walled-garden hosts: exact, or below a *.suffix (not the suffix itself)', () => {
    const garden = { settings: settings({ hosts: ['wiki.example.org', '*.cdn.example.net'] }) };
    expect(decide({ target: 'http://wiki.example.org/a' }, garden)).toEqual(NO_CHANGE);
    expect(decide({ target: 'http://WIKI.Example.org./a' }, garden)).toEqual(NO_CHANGE);
    expect(decide({ target: 'http://a.cdn.example.net/x.css' }, garden)).toEqual(NO_CHANGE);
    expect(decide({ target: 'http://a.b.cdn.example.net/x.css' }, garden)).toEqual(NO_CHANGE);
    expect(status(decide({ target: 'http://cdn.example.net/' }, garden))).toBe(302);
    expect(status(decide({ target: 'http://evilcdn.example.net/' }, garden))).toBe(302);
    expect(status(decide({ target: 'http://www.wiki.example.org/' }, garden))).toBe(302);
    expect(status(decide({ target: 'http://wiki.example.org.evil.test/' }, garden))).toBe(302);
  });

  it('matches walled-garden CIDRs when the URL names an address (IPv4, IPv6, IPv4-mapped)', () => {
    const garden = { settings: settings({ cidrs: ['192.0.2.0/24', '2001:db8:5::/48'] }) };
    expect(decide({ target: 'http://192.0.2.77/' }, garden)).toEqual(NO_CHANGE);
    expect(decide({ target: 'http://[2001:db8:5:1::9]:8080/' }, garden)).toEqual(NO_CHANGE);
    expect(decide({ target: 'http://[::ffff:192.0.2.1]/' }, garden)).toEqual(NO_CHANGE);
    expect(status(decide({ target: 'http://192.0.3.1/' }, garden))).toBe(302);
    expect(status(decide({ target: 'http://[2001:db8:6::1]/' }, garden))).toBe(302);
    // a name is never resolved to be matched against a CIDR
    expect(status(decide({ target: 'http://192.0.2.77.nip.example/' }, garden))).toBe(302);
  });

  it('judges the destination by the absolute URL, not by a Host header that names the garden', () => {
    const garden = { settings: settings({ hosts: ['wiki.example.org'] }) };
    expect(status(decide({ target: 'http://example.com/', host: 'wiki.example.org' }, garden))).toBe(302);
  });

  it('lets a URL through by where it goes only when its Host header agrees (Squid checks Host, not the URL)', () => {
    const garden = { settings: settings({ hosts: ['wiki.example.org'], cidrs: ['192.0.2.0/24'] }) };
    // An absolute URL naming the garden, the directory or Doorman, with no Host or another one: sent to
    // whatever address the client connected to, so not let through.
    for (const target of [
      'http://wiki.example.org/a',
      'http://192.0.2.7/',
      'http://dc1.example.lan/',
      'http://doorman.example.lan:8180/portal/',
    ]) {
      expect(status(decide({ target, host: undefined }, garden)), target).toBe(302);
      expect(status(decide({ target, host: 'example.com' }, garden)), target).toBe(302);
    }
    expect(status(decide({ target: 'http://doorman.example.lan:8180/', host: 'doorman.example.lan' }))).toBe(
      302,
    );
    // Agreeing in another spelling: case, trailing dot, the default port written out.
    expect(decide({ target: 'http://wiki.example.org/a', host: 'WIKI.example.org.:80' }, garden)).toEqual(
      NO_CHANGE,
    );
    expect(decide({ target: 'https://wiki.example.org/a', host: 'wiki.example.org:443' }, garden)).toEqual(
      NO_CHANGE,
    );
    expect(status(decide({ target: 'http://wiki.example.org/a', host: 'a'.repeat(400) }, garden))).toBe(302);
  });
});

describe('decidePortal: the answer to everyone else', () => {
  it('302 for GET and HEAD that take HTML; 511 for what does not', () => {
    expect(status(decide({ method: 'HEAD' }))).toBe(302);
    expect(status(decide({ accept: undefined }))).toBe(302);
    expect(status(decide({ accept: 'application/json' }))).toBe(511);
    expect(status(decide({ method: 'POST' }))).toBe(511);
    expect(status(decide({ method: 'PUT' }))).toBe(511);
    expect(status(decide({ method: 'get' }))).toBe(511); // methods are case-sensitive (RFC 9110 §9.1)
    expect(status(decide({ method: 'CONNECT', target: 'example.com:443', host: 'example.com:443' }))).toBe(
      511,
    );
  });

  it('511: Network Authentication Required with no-store and a page linking to the portal', () => {
    const decision = decide({ method: 'POST', target: 'http://example.com/form?a=<b>' });
    const link = portalFor('http://example.com/form?a=<b>').replaceAll('&', '&amp;');
    expect(decision).toMatchObject({
      kind: 'respond',
      status: 511,
      headers: { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' },
    });
    const body = decision.kind === 'respond' ? String(decision.body) : '';
    expect(body).toContain(`<a href="${link}">`);
    expect(body).not.toContain('<b>');
  });

  it('511 to a HEAD has no body', () => {
    const decision = decide({ method: 'HEAD', accept: 'image/png' });
    expect(decision).toMatchObject({ kind: 'respond', status: 511 });
    expect(decision).not.toHaveProperty('body');
  });
});

describe('the original URL', () => {
  it('is the absolute-form target as sent, or http://Host + the origin-form target', () => {
    expect(decide({ target: 'http://example.com:8080/a/b?c=d&e=%41' })).toEqual(
      redirectTo('http://example.com:8080/a/b?c=d&e=%41'),
    );
    expect(decide({ target: 'https://example.com/x' })).toEqual(redirectTo('https://example.com/x'));
    expect(decide({ target: '/a?b=c', host: 'example.com:8080' })).toEqual(
      redirectTo('http://example.com:8080/a?b=c'),
    );
    expect(decide({ target: 'http://example.com' })).toEqual(redirectTo('http://example.com/'));
    expect(decide({ target: 'http://example.com?q' })).toEqual(redirectTo('http://example.com/?q'));
    expect(decide({ target: 'http://[2001:db8::1]:81/p' })).toEqual(redirectTo('http://[2001:db8::1]:81/p'));
  });

  it('drops user info, so no password lands in the portal’s URL', () => {
    expect(decide({ target: 'http://user:secret@example.com/x' })).toEqual(
      redirectTo('http://example.com/x'),
    );
  });

  it('is left out when there is none to go back to (no Host, not http(s), malformed, CONNECT)', () => {
    expect(decide({ target: '/a', host: undefined })).toEqual(redirectTo(undefined));
    expect(decide({ target: '/a', host: 'a b' })).toEqual(redirectTo(undefined));
    expect(decide({ target: '/a', host: 'u@example.com' })).toEqual(redirectTo(undefined));
    expect(decide({ target: 'ftp://example.com/file' })).toEqual(redirectTo(undefined));
    expect(decide({ target: 'http://example.com:99999/' })).toEqual(redirectTo(undefined));
    expect(decide({ target: 'http://[not-v6]/' })).toEqual(redirectTo(undefined));
    expect(decide({ target: '*' })).toEqual(redirectTo(undefined));
  });

  it(`is left out beyond ${MAX_ORIGINAL_URL} characters`, () => {
    const prefix = 'http://example.com/';
    const longest = prefix + 'a'.repeat(MAX_ORIGINAL_URL - prefix.length);
    expect(decide({ target: longest })).toEqual(redirectTo(longest));
    expect(decide({ target: `${longest}a` })).toEqual(redirectTo(undefined));
  });

  it('is signed for the client’s address and a time (sig=), so the splash page follows only what ICAP sent', () => {
    const url = 'http://example.com/page?a=1';
    const location = (request: Partial<PortalRequest>) => {
      const decision = decide(request);
      return new URL(decision.kind === 'respond' ? (decision.headers?.Location ?? '') : '');
    };
    const sent = location({ clientIp: '::ffff:10.91.0.2' }).searchParams;
    expect(sent.get('url')).toBe(url);
    // Bound to the address in its one spelling, the one the splash page sees.
    expect(SIGNER.verify(url, CLIENT, sent.get('sig') ?? '')).toEqual({ ok: true });
    expect(SIGNER.verify(url, '10.91.0.3', sent.get('sig') ?? '')).toEqual({ ok: false, reason: 'forged' });
    expect(SIGNER.verify('http://evil.example/', CLIENT, sent.get('sig') ?? '')).toMatchObject({ ok: false });
    // No client address: nothing to bind a signature to, so no URL at all (the portal lands on its own page).
    expect(location({ clientIp: undefined }).href).toBe(PORTAL);
    expect(location({ clientIp: 'not an address' }).href).toBe(PORTAL);
  });

  it('is carried and signed only for a request with Squid’s key, so a forged X-Client-IP gains nothing', () => {
    const told: string[] = [];
    const withoutKey = () => told.push('without key');
    const url = 'http://example.com/page?a=1';
    expect(decide({ proxyKey: KEY }, { withoutKey })).toEqual(redirectTo(url));
    expect(told).toEqual([]);
    // Still sent to the portal (the client must sign in all the same), but with nothing to return to.
    expect(decide({ proxyKey: undefined }, { withoutKey })).toEqual(redirectTo(undefined));
    expect(decide({ proxyKey: 'x'.repeat(43) }, { withoutKey })).toEqual(redirectTo(undefined));
    expect(decide({ proxyKey: `${KEY} ` }, { withoutKey })).toEqual(redirectTo(undefined));
    expect(told).toEqual(['without key', 'without key', 'without key']);
    // 511's link too.
    const page = decide({ proxyKey: undefined, accept: 'image/png' });
    expect(page.kind === 'respond' ? page.body : '').toContain(`href="${PORTAL}"`);
    // Nothing to sign, nothing to tell: an identified client, or one without an address.
    expect(decide({ proxyKey: undefined, clientUsername: 'alice' }, { withoutKey })).toEqual(NO_CHANGE);
    expect(decide({ proxyKey: undefined, clientIp: undefined }, { withoutKey })).toEqual(
      redirectTo(undefined),
    );
    expect(told).toHaveLength(3);
  });

  it('is percent-encoded into ?url= so that decoding gives it back, bytes past ASCII as they came', () => {
    const url = 'http://example.com/a%20b?x=1&y=%2F&z=/#?+';
    const decision = decide({ target: url });
    const location = decision.kind === 'respond' ? (decision.headers?.Location ?? '') : '';
    expect(new URL(location).searchParams.get('url')).toBe(url);
    const encoded = location.slice(location.indexOf('?url=') + 5, location.indexOf('&sig='));
    expect(encoded).not.toMatch(/[&=?/#:+ ]/);
    // The target arrives as Latin-1 text, one character per byte: UTF-8 "é" is two of them.
    const utf8 = Buffer.from('http://example.com/é', 'utf8').toString('latin1');
    expect(percentEncode(utf8)).toBe('http%3A%2F%2Fexample.com%2F%C3%A9');
    expect(percentEncode("-_.!~*'()")).toBe("-_.!~*'()");
  });
});

describe('parseTarget', () => {
  it('gives the host in one spelling and the port (explicit, or the scheme’s)', () => {
    expect(parseTarget('http://Example.COM./', undefined)).toEqual({
      host: 'example.com',
      port: 80,
      href: 'http://Example.COM./',
      path: '/',
    });
    expect(parseTarget('https://[2001:DB8::1]/', undefined)).toMatchObject({
      host: '2001:db8::1',
      port: 443,
    });
    expect(parseTarget('http://example.com:/', undefined)).toMatchObject({ port: 80 });
    expect(parseTarget('/x', 'example.com:8080')).toMatchObject({ host: 'example.com', port: 8080 });
  });
});

describe('acceptsHtml', () => {
  it.each([
    [undefined, true],
    ['*/*', true],
    ['text/*', true],
    ['text/html', true],
    ['TEXT/HTML;Q=0.5', true],
    [BROWSER_ACCEPT, true],
    ['application/json, */*;q=0.01', true],
    ['text/html;q=0.001', true],
    ['', false],
    ['application/json', false],
    ['image/*', false],
    ['text/plain', false],
    ['text/html;q=0', false],
    ['text/html;q=0.000', false],
    // the most specific range decides
    ['text/html;q=0, */*', false],
    ['text/*;q=0, */*', false],
    ['*/*;q=0, text/html', true],
    ['text/*;q=0, text/html;q=0.1', true],
    // malformed members are skipped
    ['text/html;q=2', false],
    ['text/html;q=1.5, application/json', false],
    ['text/html;q=abc', false],
    ['texthtml', false],
    // a quoted parameter with a comma and a semicolon stays one member
    ['application/json;x="a,text/html;b", image/png', false],
    ['text/html;level="1,2";q=0.7', true],
    ['application/json;x="a\\",text/html,b"', false],
    // the same range twice: the more generous one counts
    ['text/html;q=0.5, text/html;q=0', true],
    ['text/html;q=0, text/html;q=0.5', true],
  ])('%j → %s', (accept, expected) => {
    expect(acceptsHtml(accept)).toBe(expected);
  });

  it(`refuses a header over ${MAX_ACCEPT} characters, in time linear in its length`, () => {
    const pad = `${'x'.repeat(MAX_ACCEPT - 'text/html'.length - 2)}, text/html`;
    expect(acceptsHtml(pad.slice(1))).toBe(true);
    expect(acceptsHtml(`x${pad}`)).toBe(false);
    // worst cases at the cap: all quotes, all separators
    expect(acceptsHtml('"'.repeat(MAX_ACCEPT))).toBe(false);
    expect(acceptsHtml(';'.repeat(MAX_ACCEPT))).toBe(false);
    expect(acceptsHtml(',\\'.repeat(MAX_ACCEPT / 2))).toBe(false);
  });
});

describe('portalService: the adapter for createIcapServer', () => {
  function parsed(text: string): ReqmodRequest {
    const parser = new IcapParser();
    parser.push(Buffer.from(text, 'latin1'));
    const event = parser.next();
    if (event.kind !== 'request' || event.request.method !== 'REQMOD') throw new Error('not a REQMOD');
    return event.request;
  }

  it('reads X-Client-IP, X-Client-Username, the method, target, Host and Accept from the REQMOD', () => {
    const identifiedIps = new Set<string>();
    let current = settings();
    const service = portalService({
      settings: () => current,
      settingsVersion: () => 1,
      baseUrl: BASE,
      directoryHosts: [],
      isIdentified: (ip) => identifiedIps.has(ip),
      portalUrls: SIGNER,
      proxyKey: KEY_CHECK,
    });
    const squid = (icapHeaders: string[], httpHeaders = ['Host: 10.92.0.2', 'Accept: text/html']) =>
      sync(
        service.decide(
          parsed(
            reqmod({
              icapHeaders: ['Preview: 0', 'Allow: 204', `X-Doorman-Key: ${KEY}`, ...icapHeaders],
              httpHeaders,
            }),
          ),
        ),
      );
    expect(squid(['X-Client-IP: 10.91.0.2'])).toEqual(redirectTo('http://10.92.0.2/page?a=1'));
    expect(status(squid(['X-Client-IP: 10.91.0.2'], ['Host: 10.92.0.2', 'Accept: image/png']))).toBe(511);
    expect(squid(['X-Client-IP: 10.91.0.2', 'X-Client-Username: alice'])).toEqual(NO_CHANGE);
    identifiedIps.add('10.91.0.2');
    expect(squid(['X-Client-IP: 10.91.0.2'])).toEqual(NO_CHANGE);
    // settings are read for every request
    identifiedIps.clear();
    current = settings({ cidrs: ['10.92.0.0/16'] });
    expect(squid(['X-Client-IP: 10.91.0.2'])).toEqual(NO_CHANGE);
    current = { ...settings(), mode: 'off' };
    expect(squid([])).toEqual(NO_CHANGE);
  });

  it('signs the URL only for a REQMOD whose X-Doorman-Key is the proxy key, and says which requests prove it', () => {
    const told: string[] = [];
    const service = portalService({
      settings,
      settingsVersion: () => 1,
      baseUrl: BASE,
      directoryHosts: [],
      isIdentified: () => false,
      portalUrls: SIGNER,
      proxyKey: KEY_CHECK,
      withoutKey: () => told.push('without key'),
    });
    const request = (keyHeaders: string[]) =>
      parsed(
        reqmod({
          icapHeaders: ['Preview: 0', 'Allow: 204', 'X-Client-IP: 10.91.0.2', ...keyHeaders],
          httpHeaders: ['Host: 10.92.0.2', 'Accept: text/html'],
        }),
      );
    const original = 'http://10.92.0.2/page?a=1';
    expect(sync(service.decide(request([`X-Doorman-Key: ${KEY}`])))).toEqual(redirectTo(original));
    expect(service.proves(request([`X-Doorman-Key: ${KEY}`]))).toBe(true);
    expect(told).toEqual([]);
    const forged = [[], ['X-Doorman-Key: not the key'], [`X-Doorman-Key: ${KEY}`, `X-Doorman-Key: ${KEY}`]];
    for (const keyHeaders of forged) {
      expect(sync(service.decide(request(keyHeaders)))).toEqual(redirectTo(undefined));
      expect(service.proves(request(keyHeaders))).toBe(false);
    }
    expect(told).toHaveLength(3);
  });

  it('makes an ISTag from the settings version and the fixed configuration, at most 32 characters', () => {
    let version = 7;
    const make = (baseUrl: string, directoryHosts: string[]) =>
      portalService({
        settings: settings,
        settingsVersion: () => version,
        baseUrl,
        directoryHosts,
        isIdentified: () => false,
        portalUrls: SIGNER,
        proxyKey: KEY_CHECK,
      }).istag;
    const istag = make(BASE, ['dc1']);
    const first = istag();
    expect(first).toMatch(/^dm-[A-Za-z0-9_-]{8}-7$/);
    expect(istag()).toBe(first);
    version = 8;
    expect(istag()).not.toBe(first);
    expect(istag()).toBe(first.replace(/-7$/, '-8'));
    expect(make('http://other.example/', ['dc1'])()).not.toBe(istag());
    expect(make(BASE, ['dc2'])()).not.toBe(istag());
    expect(portalIstag('abcdefgh', Number.MAX_SAFE_INTEGER).length).toBeLessThanOrEqual(32);
    expect(() => portalIstag('abcdefgh', -1)).toThrow('settings version -1: expected a whole number from 0');
    expect(() => portalIstag('abcdefgh', 1.5)).toThrow(TypeError);
  });
});

describe('decidePortal: the operating systems’ captive-portal probes', () => {
  // Every probe each OS sends, with the Accept header it sends (or none): all get the 302, so the OS opens
  // its sign-in sheet; a plain non-page request to the same host gets 511 as before.
  const probes = [
    ['http://captive.apple.com/hotspot-detect.html', 'captive.apple.com', '*/*'],
    ['http://www.apple.com/library/test/success.html', 'www.apple.com', '*/*'],
    ['http://connectivitycheck.gstatic.com/generate_204', 'connectivitycheck.gstatic.com', undefined],
    ['http://clients3.google.com/generate_204', 'clients3.google.com', 'application/json'],
    ['http://www.google.com/gen_204', 'www.google.com', 'image/webp'],
    ['http://connectivitycheck.android.com/generate_204', 'connectivitycheck.android.com', ''],
    ['http://www.msftconnecttest.com/connecttest.txt', 'www.msftconnecttest.com', 'text/plain'],
    ['http://www.msftconnecttest.com/redirect', 'www.msftconnecttest.com', 'text/plain'],
    ['http://www.msftncsi.com/ncsi.txt', 'www.msftncsi.com', 'text/plain'],
    ['http://detectportal.firefox.com/success.txt', 'detectportal.firefox.com', 'text/plain;q=0.9'],
    ['http://detectportal.firefox.com/canonical.html', 'detectportal.firefox.com', 'text/plain'],
  ] as const;

  it.each(probes)('%s (Accept %s) gets the 302 to the splash page', (target, host, accept) => {
    expect(decide({ target, host, accept })).toEqual(redirectTo(target));
    // HEAD too, in origin-form (what a client sends to a server it thinks is the origin).
    const path = target.slice(target.indexOf('/', 7));
    expect(decide({ method: 'HEAD', target: path, host, accept })).toEqual(redirectTo(target));
  });

  it('lists every path of the table, and the tests above cover every path', () => {
    const tested = new Set(probes.map(([target]) => new URL(target).pathname));
    expect(new Set(CAPTIVE_PROBES.flatMap((p) => p.paths))).toEqual(tested);
  });

  it('matches the path on any host (a lab without real DNS), ignoring the query and the case', () => {
    expect(status(decide({ target: 'http://10.92.0.2/generate_204', accept: undefined }))).toBe(302);
    expect(status(decide({ target: 'http://probe.lan/Hotspot-Detect.HTML?x=1', accept: 'x/y' }))).toBe(302);
    expect(isCaptivePortalProbe('/ncsi.txt?cb=1')).toBe(true);
    expect(isCaptivePortalProbe('/generate_204/')).toBe(false);
    expect(isCaptivePortalProbe('/a/generate_204')).toBe(false);
    expect(isCaptivePortalProbe(`/${'x'.repeat(100_000)}`)).toBe(false);
    // Not a probe: the same host, another path, no page load → 511 as for any script.
    expect(
      status(decide({ target: 'http://www.google.com/x.js', host: 'www.google.com', accept: '*/x' })),
    ).toBe(511);
  });

  it('answers a probe with the 302 even when its host is in the walled garden, never on Doorman’s own site', () => {
    const garden = settings({ hosts: ['*.google.com', 'captive.apple.com'], cidrs: ['10.92.0.0/16'] });
    const target = 'http://www.google.com/generate_204';
    expect(decide({ target, host: 'www.google.com' }, { settings: garden })).toEqual(redirectTo(target));
    expect(status(decide({ target: 'http://10.92.0.2/hotspot-detect.html' }, { settings: garden }))).toBe(
      302,
    );
    // The walled garden still lets other requests through
    expect(
      decide({ target: 'http://www.google.com/', host: 'www.google.com' }, { settings: garden }),
    ).toEqual(NO_CHANGE);
    expect(decide({ target: `${BASE}generate_204` })).toEqual(NO_CHANGE);
  });

  it('lets an identified client’s probe through (mode off, a session, a user name from Squid)', () => {
    const target = 'http://captive.apple.com/hotspot-detect.html';
    expect(decide({ target }, { isIdentified: () => true })).toEqual(NO_CHANGE);
    expect(decide({ target, clientUsername: 'alice' })).toEqual(NO_CHANGE);
    expect(decide({ target }, { settings: { ...settings(), mode: 'off' } })).toEqual(NO_CHANGE);
  });
});

describe('decidePortal: registration mode asks for the device’s MAC last', () => {
  const registration: PortalDecisionSettings = {
    ...settings({ hosts: ['garden.example'] }),
    mode: 'registration',
  };

  it('lets a registered device through (asynchronously), and redirects one that is not', async () => {
    const asked: string[] = [];
    const isRegisteredDevice = (ip: string) => (asked.push(ip), Promise.resolve(ip === '2001:db8::5'));
    const input = { settings: registration, isRegisteredDevice };
    expect(await decideAny({ clientIp: '2001:DB8::5' }, input)).toEqual(NO_CHANGE);
    expect(await decideAny({ clientIp: '10.91.0.2' }, input)).toEqual(
      redirectTo('http://example.com/page?a=1'),
    );
    expect(status(await decideAny({ clientIp: '10.91.0.2', accept: 'image/png' }, input))).toBe(511);
    // an OS probe of a registered device reaches the real server, so the OS says "online"
    const probe = { clientIp: '2001:db8::5', target: 'http://captive.apple.com/hotspot-detect.html' };
    expect(await decideAny(probe, input)).toEqual(NO_CHANGE);
    expect(asked).toEqual(['2001:db8::5', '10.91.0.2', '10.91.0.2', '2001:db8::5']);
  });

  it('a failed lookup (a rejection) is "not registered": the splash page explains, decide never rejects', async () => {
    const isRegisteredDevice = () => Promise.reject(new Error('ip: not found'));
    const decision = decideAny({}, { settings: registration, isRegisteredDevice });
    await expect(decision).resolves.toEqual(redirectTo('http://example.com/page?a=1'));
  });

  it('never looks the MAC up when something cheaper decides, nor in the other modes', () => {
    let asked = 0;
    const isRegisteredDevice = () => (asked++, Promise.resolve(true));
    const input = { settings: registration, isRegisteredDevice };
    expect(decide({}, { ...input, isIdentified: () => true })).toEqual(NO_CHANGE);
    expect(decide({ clientUsername: 'alice' }, input)).toEqual(NO_CHANGE);
    expect(decide({ target: 'http://garden.example/' }, input)).toEqual(NO_CHANGE);
    expect(decide({ target: `${BASE}portal/` }, input)).toEqual(NO_CHANGE);
    for (const mode of ['off', 'agreement', 'authentication'] as const)
      expect(status(decide({}, { ...input, settings: { ...registration, mode } }))).toBe(
        mode === 'off' ? 204 : 302,
      );
    // No client address: nothing to look up.
    expect(status(decide({ clientIp: undefined }, input))).toBe(302);
    expect(asked).toBe(0);
  });
});
