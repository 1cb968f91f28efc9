import { describe, expect, it } from 'vitest';
import type { PortalRequest } from '../../../icap-server/decision.ts';
import { MAX_ORIGINAL_URL, percentEncode } from '../../../icap-server/portal-answer.ts';
import {
  CLIENT,
  decide,
  KEY,
  NO_CHANGE,
  PORTAL,
  portalFor,
  redirectTo,
  SIGNER,
  status,
} from './portal-fixtures.ts';

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
