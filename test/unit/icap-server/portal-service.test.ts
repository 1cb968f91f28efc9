import { describe, expect, it } from 'vitest';
import { IcapParser, type ReqmodRequest } from '../../../icap-server/parser.ts';
import { portalIstag, portalService } from '../../../icap-server/portal-service.ts';
import { reqmod } from './fixtures.ts';
import {
  BASE,
  KEY,
  KEY_CHECK,
  NO_CHANGE,
  redirectTo,
  settings,
  SIGNER,
  status,
  sync,
} from './portal-fixtures.ts';

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
