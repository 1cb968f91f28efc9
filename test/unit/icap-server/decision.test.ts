import { describe, expect, it } from 'vitest';
import type { PortalDecisionSettings } from '../../../icap-server/decision.ts';
import { CAPTIVE_PROBES, isCaptivePortalProbe } from '../../../icap-server/captive-probes.ts';
import { BASE, decide, decideAny, NO_CHANGE, redirectTo, settings, status } from './portal-fixtures.ts';

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
